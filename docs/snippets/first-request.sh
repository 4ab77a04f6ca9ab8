curl -s -H 'Authorization: Bearer mock-write-token' \
  'http://127.0.0.1:8080/v1/conversations?workspace_id=ws_harborview&limit=5'
