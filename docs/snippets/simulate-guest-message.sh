curl -s -d '{"conversation_id": "ph_felix_huber", "body": "Is the sauna open tonight?"}' localhost:8080/__mock__/simulate/guest-message
curl -s -d '{"conversation_id": "ph_nobody", "body": "Hello?"}' localhost:8080/__mock__/simulate/guest-message
