"""The fragments of the inbound-events page (docs/simulate.md), run as printed."""

from pathlib import Path

HERE = Path(__file__).parent


def test_the_autopilot_fragment(mock_api):
    names = {"mock_api": mock_api}
    exec((HERE / "simulate-autopilot.py").read_text(), names)
    messages = mock_api.client().get("/v1/conversations/ph_felix_huber/messages",
                                     params={"workspace_id": "ws_alpine", "limit": 100})
    assert names["sent"]["sent_message_id"] in {m["id"] for m in messages.json()["data"]}
