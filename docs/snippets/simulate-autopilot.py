mock_api.clock.set("2026-11-01T12:00:00.000Z")  # 13:00 in Vienna: ag_alpine_host's window
sent = mock_api.simulate.guest_message("Early check-in?", conversation_id="ph_felix_huber")
assert sent["mode"] == "autopilot"  # the reply is due 15 s later (custom_response_delay_ms)
mock_api.clock.advance(15)  # ... and in the transcript now
mock_api.clock.set("2026-11-01T22:00:00.000Z")  # 23:00 in Vienna: a proposal only
late = mock_api.simulate.guest_message("Still there?", conversation_id="ph_felix_huber")
assert late["mode"] == "proposal" and late["sent_message_id"] is None
