curl -X POST localhost:8080/__mock__/reset
curl 'localhost:8080/__mock__/requests?method=POST&path=/v1/tickets&status=201'   # DELETE clears
curl -X POST localhost:8080/__mock__/faults -d '{"method":"GET","path":"/v1/agents","status":503,"count":1}'
curl -X POST localhost:8080/__mock__/faults -d '{"path":"/v1/*","delay_ms":500,"probability":0.2,"count":null}'
curl -X POST localhost:8080/__mock__/clock -d '{"advance_seconds":60}'            # or {"now":"2027-01-01T00:00:00Z"}
curl -X POST localhost:8080/__mock__/rate-limits -d '{"per_minute":5,"workspaces":{"ws_alpine":2}}'
curl -X POST 'localhost:8080/__mock__/records/contacts?workspace=ws_alpine' -d '{"first_name":"Zed"}'  # a fixture copy, new id
curl -X POST localhost:8080/__mock__/fixtures -d '{"path":"/srv/fixtures"}'      # 400 names file, record, field
curl -H 'Prefer: code=404' -H 'Authorization: Bearer mock-write-token' localhost:8080/v1/tickets/xd_x
