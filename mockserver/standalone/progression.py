"""The control API's progression operations (spec/control-openapi.yaml, tag `progression`):
modes (`GET`/`PUT /__mock__/progression`), guarded transitions
(`POST /__mock__/records/{table}/{id}/transition`) and scripted outcomes
(`PUT /__mock__/scripts/agents/{id}`, `PUT /__mock__/scripts/workflows/{id}`,
`GET /__mock__/scripts`) on the addressed session. The work is the engine's
(engine/progress_control.py), which the pytest plugin's in-process control calls too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..engine.progress_control import (
    get_progression,
    list_scripts,
    set_progression,
    set_script,
    transition_record,
)

if TYPE_CHECKING:
    from starlette.requests import Request

    from ..engine.app import MockApp

__all__ = ["ENDPOINTS"]


def _get(mock: MockApp, request: Request, query: Any, body: Any) -> dict[str, Any]:
    return get_progression(mock.state_for(request.scope))


def _put(mock: MockApp, request: Request, query: Any, body: Any) -> dict[str, Any]:
    return set_progression(mock.state_for(request.scope), body)


def _transition(mock: MockApp, request: Request, query: Any, body: Any) -> dict[str, Any]:
    return transition_record(mock, mock.state_for(request.scope),
                             request.path_params["table"], request.path_params["id"], body)


def _script_agent(mock: MockApp, request: Request, query: Any, body: Any) -> dict[str, Any]:
    return set_script(mock, mock.state_for(request.scope), "agents",
                      request.path_params["id"], body)


def _script_workflow(mock: MockApp, request: Request, query: Any, body: Any
                     ) -> dict[str, Any]:
    return set_script(mock, mock.state_for(request.scope), "workflows",
                      request.path_params["id"], body)


def _scripts(mock: MockApp, request: Request, query: Any, body: Any) -> dict[str, Any]:
    return list_scripts(mock.state_for(request.scope))


ENDPOINTS = {
    "getProgression": _get,
    "setProgression": _put,
    "transitionRecord": _transition,
    "setAgentScript": _script_agent,
    "setWorkflowScript": _script_workflow,
    "listScripts": _scripts,
}
