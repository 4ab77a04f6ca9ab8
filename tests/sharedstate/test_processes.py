"""`serve --state`: two and three worker processes, and two separate `serve` processes, on
one Redis namespace act as one mock; the CLI refuses what would diverge."""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from redis_server import RedisServer

from .conftest import fresh, serve

HARBOR = "ws_harborview"
NODES = f"/v1/kb/nodes?workspace_id={HARBOR}"


def test_two_serve_processes_act_as_one_mock(redis_server: RedisServer, namespace: str) -> None:
    with serve(redis_server.url, namespace, workers=2) as one, \
            serve(redis_server.url, namespace) as two, fresh(one) as a, fresh(two) as b:
        created = a.post(NODES, json={"title": "t", "body": "x"}).json()["data"]
        assert b.get(f"/v1/kb/nodes/{created['id']}").json()["data"] == created
        assert b.delete(f"/v1/kb/nodes/{created['id']}?workspace_id={HARBOR}").status_code == 200
        assert a.get(f"/v1/kb/nodes/{created['id']}").status_code == 404
        paths = [e["path"] for e in b.get("/__mock__/requests").json()["data"]]
        assert paths == ["/v1/kb/nodes", f"/v1/kb/nodes/{created['id']}",
                         f"/v1/kb/nodes/{created['id']}", f"/v1/kb/nodes/{created['id']}"]
        assert a.post("/__mock__/reset").status_code == 200
        again = b.post(NODES, json={"title": "t", "body": "x"}).json()["data"]
        assert again["id"] == created["id"]  # the id sequence started over for both


def test_three_workers_lose_no_update_and_share_ids_and_the_rate_limit(
        redis_server: RedisServer, namespace: str) -> None:
    with serve(redis_server.url, namespace, "--rate-limit", "0", workers=3) as base, \
            fresh(base) as client:
        created = client.post(NODES, json={"title": "t", "body": "v0"}).json()["data"]
        path = f"/v1/kb/nodes/{created['id']}?workspace_id={HARBOR}"

        def patch(i: int) -> int:
            with fresh(base) as own:
                return own.patch(path, json={"body": f"v{i + 1}"}).status_code

        def create(i: int) -> Any:
            with fresh(base) as own:
                return own.post(NODES, json={"title": f"n{i}", "body": "x"}).json()["data"]["id"]

        with ThreadPoolExecutor(8) as pool:
            statuses = list(pool.map(patch, range(24)))
            ids = list(pool.map(create, range(24)))
        assert statuses == [200] * 24
        assert client.get(path).json()["data"]["version"] == 25
        assert len(set(ids)) == 24 and created["id"] not in ids
        # One window for all three workers: 10 pass, the rest are refused.
        client.post("/__mock__/rate-limits", json={"per_minute": 10, "reset_windows": True})

        def read(i: int) -> tuple[int, str | None]:
            with fresh(base) as own:
                response = own.get(f"/v1/tickets?workspace_id={HARBOR}&limit=1")
                return response.status_code, response.headers.get("retry-after")

        with ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(read, range(30)))
        assert sorted(s for s, _ in answers) == [200] * 10 + [429] * 20
        assert all(1 <= int(r) <= 60 for s, r in answers if s == 429)


def _serve_fails(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mockserver", "serve", "--port", "1", *args],
                          capture_output=True, text=True, timeout=60)


def test_workers_without_shared_state_are_refused() -> None:
    done = _serve_fails("--workers", "2")
    assert done.returncode == 2
    assert "--workers 2 needs shared state" in done.stderr and "--state redis://" in done.stderr


def test_an_unreachable_redis_is_a_clear_error_naming_it(redis_server: RedisServer) -> None:
    url = f"redis://127.0.0.1:{redis_server.port + 1 if redis_server.port < 65535 else 1}/0"
    done = _serve_fails("--state", url)
    assert done.returncode == 2
    assert f"cannot reach Redis at {url}" in done.stderr


@pytest.mark.parametrize("option", [["--seed", "7"]])
def test_a_namespace_refuses_a_mock_started_otherwise(redis_server: RedisServer,
                                                      namespace: str, option: list[str]) -> None:
    with serve(redis_server.url, namespace):
        done = _serve_fails("--state", redis_server.url, "--state-namespace", namespace, *option)
    assert done.returncode == 2
    assert f"namespace {namespace!r}" in done.stderr and "seed" in done.stderr


def test_the_in_memory_default_never_imports_redis() -> None:
    code = ("import sys\n"
            "from mockserver.standalone.server import create_app\n"
            "import mockserver.pytest_plugin, mockserver.cli\n"
            "create_app()\n"
            "found = sorted(m for m in sys.modules if m == 'redis' or m.startswith('redis.')"
            " or m.startswith('mockserver.engine.replication'))\n"
            "assert not found, found\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr


def test_shared_state_without_redis_py_says_how_to_get_it() -> None:
    code = ("import sys\n"
            "sys.modules['redis'] = None  # as if redis-py were not installed\n"
            "from mockserver.cli import main\n"
            "sys.exit(main(['serve', '--state', 'redis://127.0.0.1:1/0', '--port', '1']))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2
    assert "pip install 'workspace-api-mock[redis]'" in done.stderr
