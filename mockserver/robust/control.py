"""The control API's variation operations (spec/control-openapi.yaml, tag `variations`):
PUT, GET and DELETE /__mock__/variations on the addressed session.

PUT draws a plan from a seed over the session's records (or checks a given plan), undoes a
previous plan's content, writes the new plan's content items into the session's records and
sets the plan on the session: nothing of it is applied when any item is refused (400 naming
the field).
"""

from __future__ import annotations

from typing import Any

from ..engine.app import MockApp
from ..engine.errors import BadRequest
from ..engine.state import MockState
from .catalogue import catalogue_for
from .plan import check_plan, draw_plan
from .runtime import Variations

__all__ = ["LOCAL_ONLY", "clear_variations", "get_variations", "set_variations", "vary"]

# Why a plan needs a state held in one process (the 409 on a shared state says it; V11).
LOCAL_ONLY = ("variations (a plan is held by the worker that set it, and its content items "
              "rewrite that worker's records in place, outside the shared log: the other "
              "workers would answer faithfully, and a rerun on a caught-up copy would lose "
              "them)")


def vary(mock: MockApp, state: MockState, body: dict[str, Any]) -> Variations:
    """Set a plan on a state from a control body: `{"seed", "kinds"?, "operations"?,
    "size"?}` draws one, `{"plan": [...]}` takes that one. Returns the plan at work."""
    state.check_local(LOCAL_ONLY)  # 409 on a state shared through Redis (DECISIONS V11)
    catalogue = catalogue_for(mock.spec)
    has_seed, has_plan = "seed" in body, "plan" in body
    if has_seed == has_plan:
        raise BadRequest("body: give either 'seed' (a plan is drawn) or 'plan' (that plan)")
    for name in ("kinds", "operations"):
        if name in body and has_plan:
            raise BadRequest(f"body field '{name}': only with 'seed' (a given plan is taken "
                             "as it is)")
    unknown = [o for o in body.get("operations") or () if o not in catalogue.operations]
    if unknown:
        raise BadRequest(f"body field 'operations': {unknown[0]!r} is not an operation of "
                         "the document")
    store = state.store
    with store.lock:
        previous = state.variations
        if previous is not None:
            previous.restore(store)
        try:
            if has_seed:
                plan = draw_plan(catalogue, store, body["seed"], kinds=body.get("kinds"),
                                 operations=body.get("operations"), size=body.get("size"))
            else:
                plan = check_plan(catalogue, store, body["plan"])
        except BaseException:  # a refusal or a bug of ours: nothing half-applied
            if previous is not None:
                previous.apply(store)  # the old plan stays whole
            raise
        variations = Variations(catalogue, plan, body.get("seed"))
        variations.apply(store)
        state.set_variations(variations)
    return variations


def set_variations(mock: MockApp, state: MockState, body: Any) -> dict[str, Any]:
    return vary(mock, state, body or {}).to_dict()


def get_variations(mock: MockApp, state: MockState) -> dict[str, Any]:
    variations = state.variations
    if variations is None:
        return {"seed": None, "plan": [], "applied": []}
    result: dict[str, Any] = variations.to_dict()
    return result


def clear_variations(mock: MockApp, state: MockState) -> None:
    """Faithful answers again: the plan's content put back, the plan gone."""
    with state.store.lock:
        variations = state.variations
        if variations is not None:
            variations.restore(state.store)
        state.set_variations(None)
