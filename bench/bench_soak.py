"""Soak: the mock under a mixed read/write load for `--minutes`, its RSS sampled throughout.

Starts `python -m mockserver serve --quiet --rate-limit 0` on a free loopback port, drives it
with wrk (a Lua script cycling through reads and writes) or, without wrk, with a few httpx
threads doing the same mix, samples VmRSS from /proc/<pid>/status every `--interval` seconds
and prints RSS at start, at the end and the maximum, and the request count. The state stays
bounded on purpose (every knowledge node created is deleted again; patches replace values), so
a growing RSS means a leak rather than a growing dataset. Loopback only; stops by itself.

    python bench/bench_soak.py --minutes 10
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).parent))
from _servers import free_port, mock_argv, running

WS = "ws_harborview"
TOKEN = "mock-write-token"
HEADERS = {"Authorization": f"Bearer {TOKEN}"}


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def targets(base: str) -> dict[str, str]:
    """Ids the load needs: a python custom tool, a ticket, and a note the token's user wrote."""
    with httpx.Client(base_url=base, headers=HEADERS, timeout=10) as http:
        tools = http.get("/v1/custom-tools", params={"workspace_id": WS, "limit": 100}).json()
        tool = next(t["id"] for t in tools["data"] if t["language"] == "python")
        ticket = http.get("/v1/tickets", params={"workspace_id": WS, "limit": 1}).json()
        ticket_id = ticket["data"][0]["id"]
        note = http.post(f"/v1/tickets/{ticket_id}/notes", json={"body": "soak note"})
        note.raise_for_status()
        conversation = http.get("/v1/conversations", params={"workspace_id": WS, "limit": 1})
        return {"tool": tool, "ticket": ticket_id, "note": note.json()["data"]["id"],
                "conversation": conversation.json()["data"][0]["id"]}


def code(variant: int) -> str:
    return f"def main(**params):\n    return {{'message': 'soak {variant}'}}\n"


LUA = r"""
local ws = "%(ws)s"
local auth = "Bearer %(token)s"
local tool, ticket, note, conv = "%(tool)s", "%(ticket)s", "%(note)s", "%(conversation)s"
local code = { %(code0)s, %(code1)s }
local threads = {}
function setup(thread) table.insert(threads, thread) end
function init(args)
  step = 0; pending = {}; non2xx = 0; server_errors = 0; created = 0; deleted = 0
end
local function req(method, path, body)
  local headers = { ["Authorization"] = auth }
  if body then headers["Content-Type"] = "application/json" end
  return wrk.format(method, path, headers, body)
end
function request()
  step = step + 1
  local k = step %% 10
  if k == 0 then return req("GET", "/v1/kb/nodes?workspace_id=" .. ws .. "&limit=20") end
  if k == 1 then return req("GET", "/v1/conversations?workspace_id=" .. ws .. "&limit=20") end
  if k == 2 then
    return req("POST", "/v1/kb/nodes?workspace_id=" .. ws,
               '{"title": "soak node", "body": "soak body ' .. step .. '"}')
  end
  if k == 3 then return req("GET", "/v1/tickets/" .. ticket) end
  if k == 4 and #pending > 0 then
    deleted = deleted + 1
    return req("DELETE", "/v1/kb/nodes/" .. table.remove(pending, 1))
  end
  if k == 5 then
    return req("PATCH", "/v1/custom-tools/" .. tool, '{"code": ' .. code[(step %% 2) + 1] .. '}')
  end
  if k == 6 then
    return req("PATCH", "/v1/tickets/" .. ticket .. "/notes/" .. note,
               '{"body": "soak note ' .. (step %% 7) .. '"}')
  end
  if k == 7 then return req("GET", "/v1/tickets?workspace_id=" .. ws .. "&limit=5") end
  if k == 8 then return req("GET", "/v1/conversations/" .. conv .. "/messages?limit=10") end
  return req("GET", "/v1/skills?workspace_id=" .. ws)
end
function response(status, headers, body)
  if status >= 500 then server_errors = server_errors + 1 end
  if status < 200 or status >= 300 then non2xx = non2xx + 1 end
  if status == 201 then
    local id = string.match(body, '^{"data":{"id":"(%%x+)"')
    if id and #id == 24 then table.insert(pending, id); created = created + 1 end
  end
end
function done(summary, latency, requests)
  local n, s, c, d = 0, 0, 0, 0
  for _, t in ipairs(threads) do
    n = n + t:get("non2xx"); s = s + t:get("server_errors")
    c = c + t:get("created"); d = d + t:get("deleted")
  end
  io.write(string.format("LUA non2xx=%%d server_errors=%%d created=%%d deleted=%%d\n", n, s, c, d))
end
"""


def lua_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def json_string(text: str) -> str:
    import json
    return json.dumps(text)


def run_wrk(base: str, ids: dict[str, str], seconds: int, connections: int) -> dict[str, int]:
    script = LUA % {"ws": WS, "token": TOKEN, **ids,
                    "code0": lua_string(json_string(code(0))),
                    "code1": lua_string(json_string(code(1)))}
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as handle:
        handle.write(script)
        path = handle.name
    try:
        out = subprocess.run(
            ["wrk", "-t2", f"-c{connections}", f"-d{seconds}s", "--timeout", "10s", "-s", path,
             base], capture_output=True, text=True, check=True,
            timeout=seconds + 60,
        ).stdout
    finally:
        Path(path).unlink(missing_ok=True)
    found = re.search(r"(\d+) requests in", out)
    lua = re.search(r"LUA non2xx=(\d+) server_errors=(\d+) created=(\d+) deleted=(\d+)", out)
    errors = re.search(r"Socket errors: (.*)", out)
    result = {"requests": int(found.group(1)) if found else 0}
    if lua:
        result.update(non2xx=int(lua.group(1)), server_errors=int(lua.group(2)),
                      created=int(lua.group(3)), deleted=int(lua.group(4)))
    if errors:
        print(f"wrk socket errors: {errors.group(1)}")
    return result


def run_httpx(base: str, ids: dict[str, str], seconds: int, threads: int) -> dict[str, int]:
    stop = time.monotonic() + seconds
    counts: Counter[str] = Counter()
    lock = threading.Lock()

    def worker(n: int) -> None:
        local: Counter[str] = Counter()
        step = 0
        with httpx.Client(base_url=base, headers=HEADERS, timeout=10) as http:
            while time.monotonic() < stop:
                step += 1
                node = http.post(f"/v1/kb/nodes?workspace_id={WS}",
                                 json={"title": "soak node", "body": f"soak {n} {step}"})
                responses = [
                    node,
                    http.get("/v1/kb/nodes", params={"workspace_id": WS, "limit": 20}),
                    http.get("/v1/conversations", params={"workspace_id": WS, "limit": 20}),
                    http.patch(f"/v1/custom-tools/{ids['tool']}", json={"code": code(step % 2)}),
                    http.patch(f"/v1/tickets/{ids['ticket']}/notes/{ids['note']}",
                               json={"body": f"soak note {step % 7}"}),
                    http.get(f"/v1/tickets/{ids['ticket']}"),
                ]
                if node.status_code == 201:
                    responses.append(http.delete(f"/v1/kb/nodes/{node.json()['data']['id']}"))
                for response in responses:
                    local["requests"] += 1
                    if not 200 <= response.status_code < 300:
                        local["non2xx"] += 1
                    if response.status_code >= 500:
                        local["server_errors"] += 1
        with lock:
            counts.update(local)

    pool = [threading.Thread(target=worker, args=(n,), daemon=True) for n in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join(timeout=seconds + 60)
    return dict(counts)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=10)
    parser.add_argument("--interval", type=float, default=5, help="seconds between RSS samples")
    parser.add_argument("--connections", type=int, default=16, help="wrk connections")
    parser.add_argument("--threads", type=int, default=4, help="httpx threads (without wrk)")
    parser.add_argument("--no-wrk", action="store_true", help="use httpx threads even with wrk")
    args = parser.parse_args()
    seconds = max(1, int(args.minutes * 60))
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    argv = mock_argv(port, "--quiet", "--rate-limit", "0", "--host", "127.0.0.1")
    use_wrk = shutil.which("wrk") is not None and not args.no_wrk
    with running(argv, f"{base}/v1", HEADERS) as proc:
        ids = targets(base)
        start_rss = rss_kib(proc.pid)
        samples: list[tuple[float, int]] = [(0.0, start_rss)]
        result: dict[str, int] = {}
        began = time.monotonic()

        def load() -> None:
            if use_wrk:
                result.update(run_wrk(base, ids, seconds, args.connections))
            else:
                result.update(run_httpx(base, ids, seconds, args.threads))

        driver = threading.Thread(target=load, daemon=True)
        driver.start()
        while driver.is_alive():
            driver.join(timeout=args.interval)
            if proc.poll() is not None:
                print("the mock exited during the soak", file=sys.stderr)
                return 1
            samples.append((time.monotonic() - began, rss_kib(proc.pid)))
        elapsed = time.monotonic() - began
        with httpx.Client(base_url=base, headers=HEADERS, timeout=10) as http:
            healthy = http.get("/v1").status_code == 200
            nodes = http.get("/v1/kb/nodes", params={"workspace_id": WS, "limit": 100}).json()
        end_rss = rss_kib(proc.pid)
    peak = max(rss for _, rss in [*samples, (elapsed, end_rss)])
    requests = result.get("requests", 0)
    print(f"driver: {'wrk' if use_wrk else 'httpx threads'}; {elapsed:.0f} s; "
          f"{len(samples)} RSS samples every {args.interval:g} s")
    print(f"requests: {requests} ({requests / elapsed:.0f}/s); non-2xx: "
          f"{result.get('non2xx', 0)}; 5xx: {result.get('server_errors', 0)}"
          + (f"; kb nodes created {result['created']}, deleted {result['deleted']}"
             if "created" in result else ""))
    print(f"RSS start: {start_rss / 1024:.1f} MiB; end: {end_rss / 1024:.1f} MiB; "
          f"max: {peak / 1024:.1f} MiB; growth: {(end_rss - start_rss) / 1024:+.1f} MiB")
    quarter = max(1, len(samples) // 4)
    tail = [rss for _, rss in samples[-quarter:]]
    print(f"RSS over the last quarter: {min(tail) / 1024:.1f}..{max(tail) / 1024:.1f} MiB; "
          f"knowledge nodes left in {WS}: {len(nodes.get('data', []))}"
          f"{'+' if nodes.get('has_more') else ''}")
    print(f"server healthy after the soak: {healthy}")
    return 0 if healthy and result.get("server_errors", 0) == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
