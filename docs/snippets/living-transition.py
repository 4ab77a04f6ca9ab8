mock_api.transition("agent_runs", run_id, "failed", error="Model provider timeout")
mock_api.transition("messages", message_id, "failed", error="Twilio error 30006")
