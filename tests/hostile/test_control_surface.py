"""Issue 38 items 9, 12, 15 and the 65-character session name (DECISIONS H17, H18, H22, H23).

- `--sessions-on-use` with `--control-token`: an anonymous caller naming unknown sessions
  creates none (the cap is not exhausted); the token holder still can.
- `POST /__mock__/fixtures` reads regular files only (a FIFO named `contacts.yaml` answers 400
  naming it instead of freezing every session), and with a control token only under
  `--fixtures-root`, echoing nothing of files outside it.
- A WebSocket upgrade gets a 4xx `{"error"}`, never a 500 with a traceback.
- A 65-character session name answers as every other bad name does."""

from __future__ import annotations

import base64
import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from .conftest import WRITE, Served, auth, error_of, raw, start, stop

TOKEN = {"X-Mock-Control-Token": "s3cret"}


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Served, Path]]:
    root = tmp_path_factory.mktemp("root")
    found = start(tmp_path_factory.mktemp("guarded"), "--control-token", "s3cret",
                  "--sessions-on-use", "--max-sessions", "3", "--fixtures-root", str(root))
    yield found, root
    stop(found)


def test_anonymous_callers_create_no_sessions_on_use(guarded: tuple[Served, Path]) -> None:
    served, _ = guarded
    with httpx.Client(base_url=served.base, timeout=10) as client:
        for n in range(6):
            anonymous = client.get(f"/sessions/anon{n}/v1/workspaces", headers=auth())
            assert anonymous.status_code == 404, anonymous.text
            header = client.get("/v1/workspaces", headers={**auth(), "X-Mock-Session": f"h{n}"})
            assert header.status_code == 404
        listed = client.get("/__mock__/sessions", headers=TOKEN).json()["data"]
        assert [s["name"] for s in listed] == ["default"]
        # The holder of the control token creates on use, and by the control API.
        own = client.get("/sessions/mine/v1/workspaces", headers={**auth(), **TOKEN})
        assert own.status_code == 200, own.text
        made = client.post("/__mock__/sessions", json={"name": "other"}, headers=TOKEN)
        assert made.status_code == 201, made.text


def _fifo_dir(root: Path) -> Path:
    directory = root / "with-fifo"
    directory.mkdir(exist_ok=True)
    (directory / "tokens.yaml").write_text(
        "- {token: t, user_id: u_1, access: write, workspace_ids: [ws_1]}\n")
    fifo = directory / "contacts.yaml"
    if not fifo.exists():
        os.mkfifo(fifo)
    return directory


def test_a_fifo_is_refused_naming_it_and_nothing_freezes(
        guarded: tuple[Served, Path]) -> None:
    served, root = guarded
    directory = _fifo_dir(root)
    with httpx.Client(base_url=served.base, timeout=10) as client:
        refused = client.post("/__mock__/fixtures", json={"path": str(directory)},
                              headers=TOKEN)
        assert refused.status_code == 400, refused.text
        message = refused.json()["error"]
        assert "contacts.yaml" in message and "regular file" in message
        assert client.get("/openapi.json").status_code == 200
        assert client.get("/v1/workspaces", headers=auth()).status_code == 200  # unchanged


def test_fixtures_outside_the_root_are_not_read(guarded: tuple[Served, Path],
                                                tmp_path: Path) -> None:
    served, root = guarded
    outside = tmp_path / "secret-fixtures"
    outside.mkdir()
    (outside / "contacts.yaml").write_text("- {id: ct_do_not_echo_me}\n")
    with httpx.Client(base_url=served.base, timeout=10) as client:
        for body in ({"path": str(outside)}, {"path": str(root / ".." / outside.name)},
                     {"paths": [str(root), str(outside)]}):
            refused = client.post("/__mock__/fixtures", json=body, headers=TOKEN)
            assert refused.status_code == 403, refused.text
            message = refused.json()["error"]
            assert "--fixtures-root" in message and "ct_do_not_echo_me" not in message


def test_without_a_root_a_token_server_reads_no_directory(tmp_path: Path) -> None:
    served = start(tmp_path, "--control-token", "s3cret")
    try:
        refused = httpx.post(f"{served.base}/__mock__/fixtures", json={"path": str(tmp_path)},
                             headers=TOKEN, timeout=10)
        assert refused.status_code == 403 and "--fixtures-root" in refused.json()["error"]
        default = httpx.post(f"{served.base}/__mock__/fixtures", json={"default": True},
                             headers=TOKEN, timeout=10)
        assert default.status_code == 200, default.text
    finally:
        stop(served)


def test_a_fifo_on_a_loopback_server_without_a_token(served: Served, tmp_path: Path) -> None:
    directory = _fifo_dir(tmp_path)
    done: list[httpx.Response] = []

    def post() -> None:
        done.append(httpx.post(f"{served.base}/__mock__/fixtures",
                               json={"path": str(directory)}, timeout=10))

    thread = threading.Thread(target=post, daemon=True)
    thread.start()
    thread.join(10)
    if thread.is_alive():  # frozen on the FIFO: let it go before failing
        with open(directory / "contacts.yaml", "w") as fh:
            fh.write("[]\n")
        thread.join(10)
        pytest.fail("the fixtures endpoint blocked on a FIFO")
    assert done[0].status_code == 400 and "contacts.yaml" in done[0].json()["error"]


@pytest.mark.parametrize("path", ["/v1/workspaces", "/__mock__/requests", "/docs", "/nope"])
def test_a_websocket_upgrade_is_a_4xx_error(served: Served, path: str) -> None:
    key = base64.b64encode(os.urandom(16)).decode()
    request = (f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
               f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
               f"Sec-WebSocket-Version: 13\r\nAuthorization: Bearer {WRITE}\r\n\r\n")
    status, headers, body = raw(served.port, request.encode())
    assert "websocket" in error_of(status, headers, body, 400).lower()
    assert b"Traceback" not in served.log.read_bytes()


def test_an_upgrade_header_on_plain_http_is_not_a_500(served: Served) -> None:
    request = (f"GET /v1/workspaces HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
               f"Authorization: Bearer {WRITE}\r\n\r\n")
    status, _, _ = raw(served.port, request.encode())
    assert status < 500


@pytest.mark.parametrize("name", ["a" * 64, "a" * 65, "a" * 300, "-bad", "b%C3%A9"])
def test_every_bad_or_unknown_session_name_answers_alike(served: Served, name: str) -> None:
    for request in (f"GET /sessions/{name}/v1/workspaces HTTP/1.1\r\n",
                    f"GET /v1/workspaces HTTP/1.1\r\nX-Mock-Session: {name}\r\n"):
        status, headers, body = raw(served.port, (
            f"{request}Host: 127.0.0.1\r\nAuthorization: Bearer {WRITE}\r\n\r\n").encode())
        assert "no session" in error_of(status, headers, body, 404)
    assert socket  # (raw sockets: the requests above bypass any client-side URL checks)


def test_fixtures_load_off_the_event_loop_within_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio

    from mockserver.engine.errors import BadRequest
    from mockserver.standalone import fixtureload
    from mockserver.standalone.operations import registry

    assert getattr(registry()["loadFixtures"], "blocking", False)  # the route's thread

    async def where() -> tuple[int, int]:
        return threading.get_ident(), await fixtureload.off_loop(threading.get_ident)

    loop_thread, load_thread = asyncio.run(where())
    assert load_thread != loop_thread
    release = threading.Event()
    monkeypatch.setattr(fixtureload, "LOAD_SECONDS", 0.05)
    try:
        with pytest.raises(BadRequest, match="seconds"):
            fixtureload.read_bounded(lambda: release.wait(10))
    finally:
        release.set()
