curl -X POST localhost:8080/__mock__/sessions -d '{"name":"job-42"}'           # 201; 409 taken, 507 cap
curl -H 'Authorization: Bearer mock-write-token' 'localhost:8080/sessions/job-42/v1/tickets?workspace_id=ws_harborview'
curl -H 'X-Mock-Session: job-42' -H 'Authorization: Bearer mock-write-token' 'localhost:8080/v1/tickets?workspace_id=ws_harborview'   # for clients that cannot change paths
curl -X POST localhost:8080/sessions/job-42/__mock__/clock -d '{"advance_seconds":60}'   # any control call, per session
curl -X POST localhost:8080/__mock__/snapshots -d '{"name":"busy-desk","session":"job-42"}'
curl -X POST localhost:8080/__mock__/sessions -d '{"name":"job-43","snapshot":"busy-desk"}'
curl -X POST localhost:8080/__mock__/sessions/job-43/reset                      # back to busy-desk
curl localhost:8080/__mock__/sessions                                           # list, sizes, caps
curl -X DELETE localhost:8080/__mock__/sessions/job-42
