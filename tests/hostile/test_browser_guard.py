"""Issue 38 items 2 and 4 (DECISIONS H13, H15, H16): what a web page in the developer's
browser can do to a served mock.

- The documents served (`/openapi.json`, `/__mock__/openapi.json`, which `/docs` and
  `/__mock__/docs` load) carry relative servers: "Try it out" calls the host (and session) the
  page came from, never a hard-coded `http://127.0.0.1:8080` (the server here is on a free port).
- The control API and the pages refuse a Host they are not bound to (DNS rebinding) and a
  browser's write from another origin (`Origin: http://evil.example`, `Origin: null`); `/v1`
  with a bearer token is not affected."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import httpx
import pytest

from .conftest import WRITE, WS, Served, auth, error_of, raw, start, stop


def test_the_documents_point_at_where_they_are_served(served: Served) -> None:
    assert served.port != 8080
    with httpx.Client(base_url=served.base, timeout=10) as client:
        for path in ("/openapi.json", "/__mock__/openapi.json"):
            document = client.get(path).json()
            urls = [server["url"] for server in document["servers"]]
            assert urls[0] == "/", (path, urls)
            assert not any("127.0.0.1" in url or "8080" in url for url in urls), urls
        client.post("/__mock__/sessions", json={"name": "docs-s"})
        document = client.get("/sessions/docs-s/openapi.json").json()
        assert [s["url"] for s in document["servers"]] == ["/sessions/docs-s"]
        # What /docs loads is that document, from where the page is.
        assert '"/sessions/docs-s/openapi.json"' in client.get("/sessions/docs-s/docs").text
        # Relative to the page, Try it out reaches this very server.
        relative = httpx.URL(f"{served.base}/docs").join(
            document["servers"][0]["url"] + "/v1/workspaces")
        assert client.get(relative, headers=auth()).status_code == 200


REBOUND = "attacker.rebind.example"


@pytest.mark.parametrize(("method", "path"), [
    ("GET", "/__mock__/requests"), ("POST", "/__mock__/reset"), ("GET", "/docs"),
    ("GET", "/openapi.json"), ("GET", "/__mock__/inspector"), ("GET", "/__mock__/openapi.json"),
])
def test_a_foreign_host_is_refused(served: Served, method: str, path: str) -> None:
    request = f"{method} {path} HTTP/1.1\r\nHost: {REBOUND}\r\nContent-Length: 0\r\n\r\n"
    message = error_of(*raw(served.port, request.encode()), 403)
    assert "'Host'" in message


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1", "[::1]", "app.localhost"])
def test_loopback_names_are_answered_on_any_port(served: Served, host: str) -> None:
    for with_port in (f"{host}:{served.port}", f"{host}:1234", host):
        request = f"GET /__mock__/requests HTTP/1.1\r\nHost: {with_port}\r\n\r\n"
        status, _, body = raw(served.port, request.encode())
        assert status == 200, (with_port, body[:200])


def test_the_api_is_not_affected(served: Served) -> None:
    request = (f"GET /v1/workspaces HTTP/1.1\r\nHost: {REBOUND}\r\nOrigin: http://evil.example"
               f"\r\nAuthorization: Bearer {WRITE}\r\n\r\n")
    status, _, body = raw(served.port, request.encode())
    assert status == 200, body[:200]


@pytest.mark.parametrize("origin", ["http://evil.example", "null", "http://localhost:1"])
def test_a_cross_origin_write_is_refused(served: Served, origin: str) -> None:
    with httpx.Client(base_url=served.base, timeout=10) as client:
        before = datetime.fromisoformat(client.get("/__mock__/clock").json()["now"])
        refused = client.post("/__mock__/clock", content='{"advance": "1h"}',
                              headers={"Origin": origin, "Content-Type": "text/plain"})
        assert refused.status_code == 403 and "'Origin'" in refused.json()["error"]
        added = client.post("/__mock__/faults", json={"status": 503, "path": "/v1/workspaces"},
                            headers={"Origin": origin})
        assert added.status_code == 403
        after = datetime.fromisoformat(client.get("/__mock__/clock").json()["now"])
        assert after - before < timedelta(minutes=30)  # not moved by the hour asked
        assert client.get("/__mock__/faults").json()["data"] == []
        # A read with an Origin is answered (a browser keeps it from the other site), and a
        # write from the mock's own pages goes through.
        assert client.get("/__mock__/faults", headers={"Origin": origin}).status_code == 200
        own = client.post("/__mock__/reset", headers={"Origin": served.base})
        assert own.status_code == 200, own.text
        # The API itself: a browser app on another origin calls it with its token.
        api = client.get("/v1/workspaces", headers={**auth(), "Origin": origin})
        assert api.status_code == 200


@pytest.fixture(scope="module")
def with_allowed_host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    found = start(tmp_path_factory.mktemp("allowed"), "--allowed-host", "mock.internal,other.test")
    yield found
    stop(found)


def test_allowed_host_names_are_answered(with_allowed_host: Served) -> None:
    for host, expected in (("mock.internal:9999", 200), ("other.test", 200),
                           ("MOCK.INTERNAL", 200), (REBOUND, 403), ("mock.internal.evil", 403)):
        request = f"GET /__mock__/requests HTTP/1.1\r\nHost: {host}\r\n\r\n"
        status, _, _ = raw(with_allowed_host.port, request.encode())
        assert status == expected, host


@pytest.fixture(scope="module")
def with_token(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    found = start(tmp_path_factory.mktemp("token"), "--control-token", "s3cret")
    yield found
    stop(found)


def test_with_a_control_token_any_host_but_still_no_cross_origin_write(
        with_token: Served) -> None:
    """A container is reached by its service name; the token is the gate (H15)."""
    request = ("GET /__mock__/requests HTTP/1.1\r\nHost: mock:8080\r\n"
               "X-Mock-Control-Token: s3cret\r\n\r\n")
    status, _, body = raw(with_token.port, request.encode())
    assert status == 200, body[:200]
    request = ("POST /__mock__/reset HTTP/1.1\r\nHost: mock:8080\r\nOrigin: null\r\n"
               "X-Mock-Control-Token: s3cret\r\nContent-Length: 0\r\n\r\n")
    assert "'Origin'" in error_of(*raw(with_token.port, request.encode()), 403)


def test_the_env_variable_sets_allowed_hosts(monkeypatch: pytest.MonkeyPatch,
                                             tmp_path: Path) -> None:
    from mockserver import cli
    from mockserver.standalone import cli as serve_cli

    monkeypatch.setenv("MOCK_API_ALLOWED_HOST", "one.test,two.test")
    args = cli.build_parser().parse_args(["serve"])
    assert serve_cli._config(args).allowed_hosts == ("one.test", "two.test")
    assert WS  # the dataset's workspace (imported for the suite's other tests)


def test_the_servers_own_origin_is_compared_as_browsers_send_it() -> None:
    from mockserver.engine.app import Config
    from mockserver.engine.errors import Forbidden
    from mockserver.standalone.guard import check_browser

    config = Config(allowed_hosts=())

    def scope(host: str, origin: str) -> dict[str, object]:
        return {"method": "POST", "scheme": "http",
                "headers": [(b"host", host.encode()), (b"origin", origin.encode())]}

    for host, origin in (("localhost:80", "http://localhost"), ("LOCALHOST:8080",
                                                                "http://localhost:8080")):
        check_browser(config, frozenset(), scope(host, origin))
    for host, origin in (("localhost:8080", "http://localhost:8081"),
                         ("localhost:8080", "https://localhost:8080"),
                         ("localhost", "null")):
        with pytest.raises(Forbidden, match="'Origin'"):
            check_browser(config, frozenset(), scope(host, origin))
