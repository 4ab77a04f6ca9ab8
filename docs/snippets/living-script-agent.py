mock_api.script_agent("ag_harbor_concierge", [
    {"status": "completed", "response": "Your door code is 4821.", "disposition": "resolved",
     "token_usage": {"input": 1200, "output": 90}, "duration_ms": 4000},
    {"status": "failed", "error": "Model provider timeout"},
])
mock_api.scripts()  # {"agents": {...}, "consumed": [...], "misses": [...], "missed": 0}
