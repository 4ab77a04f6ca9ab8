curl -s localhost:8080/__mock__/clock                               # as served with --clock
curl -s -d '{"now": "2026-11-01T12:00:00Z", "frozen": true}' localhost:8080/__mock__/clock
curl -s -d '{"frozen": false}' localhost:8080/__mock__/clock    # runs on from there
curl -s -d '{"advance_seconds": 3600}' localhost:8080/__mock__/clock
curl -s -d '{"now": "2026-11-01T12:00:00Z", "advance_seconds": 60}' localhost:8080/__mock__/clock
