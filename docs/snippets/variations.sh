curl -X POST localhost:8080/__mock__/sessions -d '{"name":"robust-1"}'
curl -X PUT localhost:8080/sessions/robust-1/__mock__/variations -d '{"seed":7,"kinds":["null","rate-limit"]}'
curl -H 'Authorization: Bearer mock-write-token' 'localhost:8080/sessions/robust-1/v1/tickets?workspace_id=ws_harborview'
curl localhost:8080/sessions/robust-1/__mock__/variations
curl -X PUT localhost:8080/sessions/robust-1/__mock__/variations -d '{"plan":[{"kind":"rate-limit","operation":"getTicket","call":1,"retry_after":7}]}'
curl -H 'Authorization: Bearer mock-write-token' localhost:8080/sessions/robust-1/v1/tickets/xd_emma_clarke_door_code
curl -X DELETE localhost:8080/sessions/robust-1/__mock__/variations
