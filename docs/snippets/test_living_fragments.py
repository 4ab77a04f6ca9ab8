"""The fragments of the living-workspace page (docs/living-workspace.md), run as printed."""

from pathlib import Path

HERE = Path(__file__).parent


def test_the_progression_modes_fragment(mock_api):
    exec((HERE / "living-progression-modes.py").read_text(), {"mock_api": mock_api})
    modes = mock_api.progression.get()
    assert modes["agent_runs"]["mode"] == "time" and modes["messages"]["mode"] == "manual"


def test_the_script_agent_fragment(mock_api):
    exec((HERE / "living-script-agent.py").read_text(), {"mock_api": mock_api})
    assert mock_api.scripts()["agents"]
