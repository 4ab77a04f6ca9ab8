"""A hypothesis state machine over the mock: creates, patches and deletes skills, custom tools,
knowledge nodes and ticket notes, and moves tickets through their states, checking after every
step that reads show the writes, ticket transitions follow the documented rules, small pages
walk every item once, and nothing ever answers 5xx (self-check is on: a response that breaks
the document raises)."""

from __future__ import annotations

from typing import Any

import httpx
from conftest import FROZEN_AT, auth
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    initialize,
    invariant,
    multiple,
    rule,
)
from starlette.testclient import TestClient

from mockserver.engine.app import Config, MockApp
from mockserver.standalone.server import create_app

WS = "ws_harborview"
MOCK = MockApp(Config(self_check=True, frozen_clock=FROZEN_AT, cursor_secret=b"stateful",
                      rate_limit=0))
CLIENT = TestClient(create_app(mock=MOCK), headers=auth())

words = st.text(alphabet="abcdefghijklmnopqrstuvwxyz ", min_size=1, max_size=30).filter(
    lambda s: s.strip() != "")


def call(method: str, url: str, **kwargs: Any) -> httpx.Response:
    response = CLIENT.request(method, url, **kwargs)
    assert response.status_code < 500, (method, url, response.status_code, response.text)
    return response


def walk(url: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    cursor = None
    for _ in range(1000):
        response = call("GET", url, params={**params, **({"cursor": cursor} if cursor else {})})
        assert response.status_code == 200, response.text
        page = response.json()
        items += page["data"]
        assert (page["next_cursor"] is None) == (page["has_more"] is False)
        if not page["has_more"]:
            return items
        cursor = page["next_cursor"]
    raise AssertionError(f"{url}: pagination did not end")


class MockMachine(RuleBasedStateMachine):
    skills = Bundle("skills")
    tools = Bundle("tools")
    nodes = Bundle("nodes")
    notes = Bundle("notes")
    tickets = Bundle("tickets")

    def __init__(self) -> None:
        super().__init__()
        MOCK.reset()
        self.counter = 0
        self.expected: dict[str, dict[str, Any]] = {}  # id -> fields a read must show
        self.urls: dict[str, str] = {}  # id -> its read URL
        self.tickets_state: dict[str, dict[str, Any]] = {}
        self.live_nodes: set[str] = set()

    def _name(self, kind: str) -> str:
        self.counter += 1
        return f"sm-{kind}-{self.counter}"

    def _remember(self, ident: str, url: str, fields: dict[str, Any]) -> None:
        self.urls[ident] = url
        self.expected[ident] = {**self.expected.get(ident, {}), **fields}

    # -- setup ------------------------------------------------------------------------------

    @initialize(target=tickets)
    def load_tickets(self) -> Any:
        found = walk("/v1/tickets", {"workspace_id": WS, "limit": 100})
        for ticket in found:
            self.tickets_state[ticket["id"]] = {"status": ticket["status"],
                                                "reopen_count": ticket.get("reopen_count", 0)}
        return multiple(*[t["id"] for t in found])

    # -- skills -----------------------------------------------------------------------------

    @rule(target=skills, description=words, body=words)
    def create_skill(self, description: str, body: str) -> str:
        name = self._name("skill")
        response = call("POST", "/v1/skills", json={
            "workspace_id": WS, "name": name, "description": description, "body": body,
            "auto_assign_to_existing_v2_agents": False})
        assert response.status_code == 201, response.text
        skill = response.json()["data"]
        self._remember(skill["id"], f"/v1/skills/{skill['id']}",
                       {"name": name, "description": description, "body": body})
        return str(skill["id"])

    @rule(skill=skills, description=words)
    def patch_skill(self, skill: str, description: str) -> None:
        response = call("PATCH", f"/v1/skills/{skill}", json={"description": description})
        assert response.status_code == 200, response.text
        assert response.json()["data"]["description"] == description
        self._remember(skill, f"/v1/skills/{skill}", {"description": description})

    # -- custom tools -----------------------------------------------------------------------

    @rule(target=tools, language=st.sampled_from(["python", "javascript"]))
    def create_tool(self, language: str) -> str:
        name = self._name("tool")
        response = call("POST", "/v1/custom-tools", json={
            "workspace_id": WS, "name": name, "description": "state machine",
            "language": language, "code": self._code(language, 0)})
        assert response.status_code == 201, response.text
        tool = response.json()["data"]
        assert tool["version"] == 1
        self._remember(tool["id"], f"/v1/custom-tools/{tool['id']}",
                       {"name": name, "language": language, "version": 1,
                        "code": self._code(language, 0)})
        return str(tool["id"])

    @staticmethod
    def _code(language: str, variant: int) -> str:
        if language == "python":
            return f"def main(**params):\n    return {{'message': 'v{variant}'}}\n"
        return f"async function main(params) {{\n  return {{ message: 'v{variant}' }};\n}}\n"

    @rule(tool=tools, variant=st.integers(min_value=0, max_value=3))
    def patch_tool_code(self, tool: str, variant: int) -> None:
        before = self.expected[tool]
        code = self._code(before["language"], variant)
        response = call("PATCH", f"/v1/custom-tools/{tool}", json={"code": code})
        assert response.status_code == 200, response.text
        version = before["version"] + (code != before["code"])  # same code: no new version
        assert response.json()["data"]["version"] == version
        self._remember(tool, f"/v1/custom-tools/{tool}", {"code": code, "version": version})

    # -- knowledge nodes --------------------------------------------------------------------

    @rule(target=nodes, title=words, body=words)
    def create_node(self, title: str, body: str) -> str:
        response = call("POST", f"/v1/kb/nodes?workspace_id={WS}",
                        json={"title": title, "body": body})
        assert response.status_code == 201, response.text
        node = response.json()["data"]
        self._remember(node["id"], f"/v1/kb/nodes/{node['id']}",
                       {"title": title, "body": body, "version": 1})
        self.live_nodes.add(node["id"])
        return str(node["id"])

    @rule(node=nodes, title=words)
    def patch_node(self, node: str, title: str) -> None:
        response = call("PATCH", f"/v1/kb/nodes/{node}?workspace_id={WS}", json={"title": title})
        if node not in self.live_nodes:
            assert response.status_code == 404, response.text
            return
        assert response.status_code == 200, response.text
        self._remember(node, f"/v1/kb/nodes/{node}", {"title": title})

    @rule(node=consumes(nodes))
    def delete_node(self, node: str) -> None:
        response = call("DELETE", f"/v1/kb/nodes/{node}")
        assert response.status_code == 200, response.text
        assert response.json()["deleted_count"] == 1
        self.live_nodes.discard(node)
        self.expected.pop(node, None)
        assert call("GET", f"/v1/kb/nodes/{node}").status_code == 404

    # -- tickets ----------------------------------------------------------------------------

    @rule(target=notes, ticket=tickets, body=words)
    def create_note(self, ticket: str, body: str) -> tuple[str, str]:
        response = call("POST", f"/v1/tickets/{ticket}/notes", json={"body": body})
        assert response.status_code == 201, response.text
        note = response.json()["data"]
        assert note["body"] == body and note["ticket_id"] == ticket
        self._remember(note["id"], f"/v1/tickets/{ticket}/notes", {"body": body})
        return ticket, str(note["id"])

    @rule(note=notes, body=words)
    def patch_note(self, note: tuple[str, str], body: str) -> None:
        ticket, note_id = note
        response = call("PATCH", f"/v1/tickets/{ticket}/notes/{note_id}", json={"body": body})
        assert response.status_code == 200, response.text
        assert response.json()["data"]["body"] == body
        self._remember(note_id, f"/v1/tickets/{ticket}/notes", {"body": body})

    @rule(ticket=tickets, action=st.sampled_from(["resolve", "reopen", "close"]))
    def move_ticket(self, ticket: str, action: str) -> None:
        state = self.tickets_state[ticket]
        allowed = {"resolve": state["status"] in ("new", "pending"),
                   "reopen": state["status"] == "resolved",
                   "close": state["status"] == "resolved"}[action]
        response = call("POST", f"/v1/tickets/{ticket}/{action}")
        if not allowed:
            assert response.status_code == 400, (action, state, response.text)
            assert state["status"] in response.json()["error"]
            return
        assert response.status_code == 200, (action, state, response.text)
        data = response.json()["data"]
        status = {"resolve": "resolved", "reopen": "pending", "close": "closed"}[action]
        reopen_count = state["reopen_count"] + (action == "reopen")
        assert data["status"] == status
        assert data.get("reopen_count", 0) == reopen_count
        self.tickets_state[ticket] = {"status": status, "reopen_count": reopen_count}

    # -- invariants -------------------------------------------------------------------------

    @invariant()
    def reads_show_the_writes(self) -> None:
        listed: dict[str, dict[str, dict[str, Any]]] = {}  # notes: one walk per ticket
        for ident, fields in self.expected.items():
            url = self.urls[ident]
            if "/notes" in url:
                if url not in listed:
                    listed[url] = {r["id"]: r for r in walk(url, {"limit": 100})}
                record = listed[url][ident]
            else:
                response = call("GET", url)
                assert response.status_code == 200, response.text
                record = response.json()["data"]
            for key, value in fields.items():
                assert record[key] == value, (ident, key, record[key], value)

    @invariant()
    def tickets_are_as_moved(self) -> None:
        for ticket, state in self.tickets_state.items():
            data = call("GET", f"/v1/tickets/{ticket}").json()["data"]
            assert data["status"] == state["status"], ticket
            assert data.get("reopen_count", 0) == state["reopen_count"], ticket

    @invariant()
    def small_pages_walk_every_item_once(self) -> None:
        for url, mine in (("/v1/kb/nodes", self.live_nodes),
                          ("/v1/skills", {i for i, u in self.urls.items() if "/skills/" in u}),
                          ("/v1/custom-tools",
                           {i for i, u in self.urls.items() if "/custom-tools/" in u})):
            ids = [r["id"] for r in walk(url, {"workspace_id": WS, "limit": 3})]
            assert len(ids) == len(set(ids)), f"{url}: an item appeared twice"
            everything = [r["id"] for r in walk(url, {"workspace_id": WS, "limit": 100})]
            assert ids == everything, f"{url}: small pages differ from one big page"
            assert mine <= set(ids), f"{url}: a created item is missing"


MockMachine.TestCase.settings = settings(
    max_examples=20, stateful_step_count=15, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
TestMockMachine = MockMachine.TestCase
