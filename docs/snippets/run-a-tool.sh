curl -s -X POST http://127.0.0.1:8080/v1/custom-tools/kg_harbor_tides/run \
  -H 'Authorization: Bearer mock-write-token' -H 'Content-Type: application/json' \
  -d '{"parameters": {"date": "2026-11-02"}}'
