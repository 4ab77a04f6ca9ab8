"""The container files read as docs/getting-started/container.md says, without Docker (tests/container
builds and runs them): the image's promises in the Dockerfile, the gate's build stage the
mock's (so the build cache shares it), compose.yaml's replicas on one Redis."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def _stage(text: str, name: str) -> str:
    return text.split(f" AS {name}\n", 1)[1].split("\nFROM ", 1)[0]


def test_the_image_promises() -> None:
    text = (ROOT / "Dockerfile").read_text()
    assert re.search(r"^ARG BASE=python:3\.\d+-slim$", text, re.M)
    final = text.rsplit("\nFROM ", 1)[1]
    assert "USER 10001:10001" in final and "EXPOSE 8080" in final and "HEALTHCHECK" in final
    assert "MOCK_API_HOST=0.0.0.0" in final and "MOCK_API_CONTROL_TOKEN=" not in final
    entrypoint = (ROOT / "docker/entrypoint.sh").read_text()
    assert "exec python3 -m mockserver serve" in entrypoint  # PID 1 gets SIGTERM
    assert "MOCK_API_FIXTURES=/fixtures" in entrypoint


def test_the_gate_builds_on_the_mocks_build_stage() -> None:
    mock = (ROOT / "Dockerfile").read_text()
    gate = (ROOT / "docker/gate.Dockerfile").read_text()
    assert _stage(gate, "build") == _stage(mock, "build")
    assert 'ENTRYPOINT ["python3", "-m", "mockserver", "conform"]' in gate


def test_compose_runs_two_replicas_on_one_redis() -> None:
    services = yaml.safe_load((ROOT / "compose.yaml").read_text())["services"]
    replicas = [s for s in services.values() if "MOCK_API_STATE" in s.get("environment", {})]
    assert len(replicas) == 2 and "redis" in services
    for replica in replicas:
        assert replica["environment"]["MOCK_API_STATE"].endswith("redis://redis:6379/0}")
        assert replica["depends_on"] == ["redis"]
    assert len({r["ports"][0] for r in replicas}) == 2
