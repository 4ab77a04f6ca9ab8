"""Bind safety decided on the bound sockets, not the `--host` string: any socket off loopback
('' and 0.0.0.0 bind every interface; a Unix socket can be shared into a container) and the
control API needs the control token, and start-up says so loudly. Sockets here are bound and
never listen: nothing is reachable from off the host while the tests run."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from starlette.testclient import TestClient

from mockserver import cli
from mockserver.engine.app import Config
from mockserver.standalone.bind import bind_sockets, exposed_addresses
from mockserver.standalone.cli import PROTOCOL
from mockserver.standalone.control import is_loopback
from mockserver.standalone.server import create_app


def _exposed(host: str) -> list[str]:
    sockets = bind_sockets(host, 0)
    try:
        return exposed_addresses(sockets)
    finally:
        for sock in sockets:
            sock.close()


@pytest.mark.parametrize("host", ["", "0.0.0.0"])
def test_every_interface_is_exposed(host: str) -> None:
    found = _exposed(host)
    assert found and any(a.startswith("0.0.0.0:") or a.startswith("[::]:") for a in found)


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "127.0.0.2"])
def test_loopback_is_not_exposed(host: str) -> None:
    assert _exposed(host) == []


def test_a_unix_socket_counts_as_exposed(tmp_path: Path) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.bind(str(tmp_path / "mock.sock"))
        assert exposed_addresses([sock]) == [f"unix:{tmp_path / 'mock.sock'}"]


def test_the_empty_host_is_not_loopback() -> None:
    assert not is_loopback("") and not is_loopback("0.0.0.0") and not is_loopback("::")
    assert is_loopback("127.0.0.1") and is_loopback("[::1]") and is_loopback("localhost")


@pytest.mark.parametrize("exposed, token, status", [
    ((), None, 200),
    (("0.0.0.0:8080",), None, 403),
    (("0.0.0.0:8080",), "s3cret", 200),
    (("unix:/tmp/mock.sock",), None, 403),
])
def test_control_needs_the_token_when_any_socket_is_exposed(
        exposed: tuple[str, ...], token: str | None, status: int) -> None:
    # The host string says loopback; the sockets decide.
    app = create_app(Config(host="127.0.0.1", exposed=exposed, control_token=token,
                            request_log=False))
    with TestClient(app) as client:
        headers = {"X-Mock-Control-Token": token} if token else {}
        for method, path in [("POST", "/__mock__/reset"), ("GET", "/__mock__/requests"),
                             ("POST", "/__mock__/clock")]:
            body = {"advance_seconds": 1} if path.endswith("clock") else None
            response = client.request(method, path, json=body, headers=headers)
            assert response.status_code == status, (path, response.text)
            if status == 403:
                assert "--control-token" in response.json()["error"]


def _serve_without_listening(monkeypatch: pytest.MonkeyPatch,
                             *argv: str) -> tuple[int, dict[str, Any]]:
    seen: dict[str, Any] = {}

    def run(self: uvicorn.Server, sockets: list[socket.socket] | None = None) -> None:
        seen["app"] = self.config.app
        seen["http"] = self.config.http
        seen["sockets"] = [s.getsockname() for s in sockets or ()]

    monkeypatch.setattr(uvicorn.Server, "run", run)
    code = cli.main(["serve", "--port", "0", "--quiet", *argv])
    return code, seen


def test_serve_on_every_interface_disables_control_and_says_so(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    code, seen = _serve_without_listening(monkeypatch, "--host", "")
    assert code == 0 and seen["sockets"]
    err = capsys.readouterr().err
    assert "WARNING: the mock listens on" in err and "not loopback" in err
    assert "control API (/__mock__/) is DISABLED" in err
    with TestClient(seen["app"], base_url="http://localhost:8080") as client:
        assert client.post("/__mock__/reset").status_code == 403
        assert client.get("/__mock__/requests").status_code == 403
    assert seen["http"] == PROTOCOL


def test_serve_on_every_interface_with_a_token_requires_it(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    code, seen = _serve_without_listening(monkeypatch, "--host", "0.0.0.0",
                                          "--control-token", "s3cret")
    assert code == 0
    assert "requires X-Mock-Control-Token" in capsys.readouterr().err
    with TestClient(seen["app"], base_url="http://localhost:8080") as client:
        assert client.post("/__mock__/reset").status_code == 403
        assert client.post("/__mock__/reset",
                           headers={"X-Mock-Control-Token": "s3cret"}).status_code == 200


def test_serve_on_loopback_says_nothing_and_keeps_control_open(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    code, seen = _serve_without_listening(monkeypatch, "--host", "localhost")
    assert code == 0
    assert "WARNING" not in capsys.readouterr().err
    with TestClient(seen["app"], base_url="http://localhost:8080") as client:
        assert client.post("/__mock__/reset").status_code == 200
