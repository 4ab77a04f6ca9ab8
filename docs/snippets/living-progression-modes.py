mock_api.progression.set("agent_runs", mode="time", running_after=1, done_after=6)
mock_api.progression.set("messages", mode="manual")
mock_api.progression.get()  # {"agent_runs": {"mode": "time", ...}, ...}
