"""The workspace lives: work the service does over time progresses on the mock's clock.

Agent runs (`accepted → running → completed | failed`), workflow executions
(`STARTED → RUNNING → SUCCESS | FAILED | CANCELLED`, their event timeline growing), outbound
messages (`sent → delivered → read`, or `failed`) and knowledge-base files
(`pending → processing → indexed | failed`) are read as a function of what is stored and the
clock (`view`): when the record started, its outcome, the session's mode for its kind and the
clock's instant. Nothing runs in the background and nothing is written by a read; advancing the
clock moves what a read shows, a frozen clock holds it. What is stored (a record's start and
outcome in its internal `_progress` field, the session's modes and scripts in the internal
`_mock` table) is written as any record is, so it is the same in every session, snapshot, fork
and on Redis shared state (one `Write` command).

A record *settles* when a test's transition moves it to an end state: the transition writes
the record as the API then shows it, without `_progress`, and reads return it as stored.
A stored end state without `_progress` (most fixture records) is settled. A fixture record in
a moving state (a `running` run, a `STARTED` execution, a `sent` outbound message, a
`pending` file) progresses from its own start towards its kind's default outcome.

Modes, per session and kind (`PUT /__mock__/progression`): `immediate` (a record reads at its
outcome at once), `time` (the middle state `running_after` seconds after its start, the
outcome `done_after` seconds after it) and `manual` (a record stays where it is until a
transition moves it). Defaults and the outcomes' figures: spec/DECISIONS.md P1-P20.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from .clock import MAX_MS, format_timestamp, parse_timestamp
from .store import Record, Store

__all__ = ["KINDS", "MOCK_TABLE", "MODES", "TRANSITION_FIELDS", "Kind", "Refused",
           "checked_mode", "chunk_count", "clock_log", "cron_fires", "default_modes", "dispatch_execution", "events_of",
           "fire_crons", "in_schedule", "mode_of", "modes_of", "new_run", "pinned", "scripts_of",
           "set_modes", "settle", "start_of", "state_of", "take_outcome", "timezone_problem",
           "transition", "view"]

MOCK_TABLE = "_mock"  # internal records of a session: modes, scripts (key field "id")
MODES = ("immediate", "time", "manual")
PROGRESSION_KEY = "progression"

# Inferred (spec/DECISIONS.md P6): a chunk of an indexed body holds up to this many characters.
CHUNK_CHARS = 1000
# Inferred (P8): the price a run's tokens cost when its model names none, USD per token
# (3 and 15 USD per million input and output tokens: what the fixture runs' costs imply).
INPUT_PRICE = 3e-6
OUTPUT_PRICE = 15e-6


def chunk_count(body: str) -> int:
    """The chunks an indexed body is split into (at least one)."""
    return max(1, math.ceil(len(body) / CHUNK_CHARS))


@dataclass(frozen=True)
class Kind:
    """One kind of work that progresses: its table, status field, where its start is, its
    states in order (`initial`, `middle`, then the end states) and default durations."""

    table: str
    field: str
    start_fields: tuple[str, ...]
    initial: str
    middle: str
    ends: tuple[str, ...]
    running_after: float  # seconds after the start (time mode), inferred: DECISIONS P2-P5
    done_after: float
    applies: Callable[[Record], bool] = lambda record: True

    @property
    def order(self) -> tuple[str, ...]:
        return (self.initial, self.middle, *self.ends)

    def moving(self, status: Any) -> bool:
        return status == self.initial or (status == self.middle and self.middle not in self.ends)


KINDS: dict[str, Kind] = {
    "agent_runs": Kind("agent_runs", "status", ("created_at",), "accepted", "running",
                       ("completed", "failed"), 2, 12),
    "workflow_executions": Kind("workflow_executions", "status", ("started_at",), "STARTED",
                                "RUNNING", ("SUCCESS", "FAILED", "CANCELLED"), 2, 60),
    # An outbound message: delivered is an end (most channels report no reads) and a middle.
    "messages": Kind("messages", "status", ("sent_at", "created_at"), "sent", "delivered",
                     ("delivered", "read", "failed"), 3, 60,
                     applies=lambda r: r.get("direction") == "outbound"),
    "kb_nodes": Kind("kb_nodes", "embed_status", ("updated_at", "created_at"), "pending",
                     "processing", ("indexed", "failed"), 2, 10,
                     applies=lambda r: not r.get("is_directory")),
}


def default_modes() -> dict[str, dict[str, Any]]:
    """Every kind in `time` mode at its default durations (DECISIONS P1)."""
    return {name: {"mode": "time", "running_after": k.running_after,
                   "done_after": k.done_after} for name, k in KINDS.items()}


def modes_of(store: Store) -> dict[str, dict[str, Any]]:
    """The session's mode and durations per kind."""
    found = store.get(MOCK_TABLE, PROGRESSION_KEY)
    modes = default_modes()
    if found is not None:
        for name, value in found["kinds"].items():
            modes[name] = dict(value)
    return modes


def mode_of(store: Store, table: str) -> Mapping[str, Any]:
    found = store.get(MOCK_TABLE, PROGRESSION_KEY)
    if found is not None and table in found["kinds"]:
        value: Mapping[str, Any] = found["kinds"][table]
        return value
    kind = KINDS[table]
    return {"mode": "time", "running_after": kind.running_after, "done_after": kind.done_after}


def pinned(table: str, record: Record) -> dict[str, Any]:
    """The changes that keep a moving record's start where it is when a write moves the
    field it is read from (a patch moves a file's `updated_at`): `{}` when nothing moves."""
    kind = KINDS[table]
    if record.get("_progress") is not None or not (
            kind.moving(record.get(kind.field)) and kind.applies(record)):
        return {}
    return {"_progress": {"start": start_of(kind, record)}}


def start_of(kind: Kind, record: Record) -> int:
    progress = record.get("_progress")
    if progress is not None and "start" in progress:
        return int(progress["start"])
    for name in kind.start_fields:
        value = record.get(name)
        if isinstance(value, str):
            return parse_timestamp(value)
    return 0


def _rank(kind: Kind, status: str) -> int:
    order = kind.order
    return order.index(status) if status in order else 0


def outcome_of(kind: Kind, record: Record) -> dict[str, Any]:
    """The outcome a moving record reaches: its scripted or stored one, else the default."""
    progress = record.get("_progress")
    if progress is not None and progress.get("outcome"):
        outcome = {"status": kind.ends[0], **progress["outcome"]}  # ends well by default
        if outcome["status"] not in kind.ends:  # not an end of this kind: the default end
            outcome["status"] = kind.ends[0]
        return outcome
    if kind.table == "messages":
        # Inferred (P11): WhatsApp reports reads; the other channels stop at delivered.
        return {"status": "read" if record.get("channel") == "whatsapp" else "delivered"}
    return {"status": kind.ends[0]}


def state_of(kind: Kind, record: Record, modes: Mapping[str, Any], now_ms: int
             ) -> tuple[str, int]:
    """The status a moving record reads at `now_ms`, and the instant it got there."""
    stored = record[kind.field]
    final = outcome_of(kind, record)["status"]
    start = start_of(kind, record)
    mode = modes["mode"]
    done_at = min(start + int(modes["done_after"] * 1000), MAX_MS)
    middle_at = min(start + int(modes["running_after"] * 1000), done_at)
    if mode == "immediate":
        reached, at = final, start
    elif mode == "manual":
        reached, at = stored, start
    elif now_ms >= done_at:
        reached, at = final, done_at
    elif now_ms >= middle_at and not (final == "failed" and kind.middle in kind.ends):
        # (a message that fails was never delivered)
        reached, at = kind.middle, middle_at
    else:
        reached, at = kind.initial, start
    if _rank(kind, stored) > _rank(kind, reached):
        reached, at = stored, start  # a transition moved it further (the floor)
    return reached, at


def view(store: Store, table: str, record: Record, modes: Mapping[str, Any] | None = None,
         now_ms: int | None = None) -> Record:
    """`record` of `table` as the API shows it now (itself when it does not move)."""
    kind = KINDS[table]
    progress = record.get("_progress")
    if progress is None:
        if not (kind.moving(record.get(kind.field)) and kind.applies(record)):
            return record
    elif progress.get("held"):
        return record  # robustness mode varied it: shown as varied
    if modes is None:
        modes = mode_of(store, table)
    if now_ms is None:
        now_ms = store.clock.now_ms()
    status, at = state_of(kind, record, modes, now_ms)
    if progress is None and status == record.get(kind.field):
        return record  # a fixture record where it was stored (manual mode, or not moved yet)
    return _RENDER[table](store, kind, record, status, at, modes)


# -- what each kind shows in each state --------------------------------------------------


def _digest(*parts: str) -> str:
    return hashlib.blake2b("|".join(parts).encode(), digest_size=8).hexdigest()


def _stamp(ms: int) -> str:
    return format_timestamp(min(ms, MAX_MS))


_RUN_DEFAULT = {
    # Inferred (P7): what a run answering a guest plausibly shows; token usage and duration
    # in the range of the fixture runs.
    "disposition": "answered",
    "disposition_reason": "Answered the guest's question.",
    "response": "Thanks for your message. I've looked into it and everything is set.",
    "reflection": "The request was covered by the knowledge base; no escalation was needed.",
    "token_usage": {"input": 1800, "output": 240},
}
_RUN_FAILED = {
    "disposition": "error",
    "disposition_reason": "The run failed.",
    "error": "Model provider timeout",  # inferred (P7)
    "token_usage": {"input": 900, "output": 0},
}


def _render_run(store: Store, kind: Kind, record: Record, status: str, at: int,
                modes: Mapping[str, Any]) -> Record:
    run = dict(record)
    run["status"] = status
    start = start_of(kind, record)
    trace_id = str(record.get("id", ""))
    if status == "accepted":
        run.update(disposition="pending", completed_at=None, duration_ms=0,
                   token_usage={"input": 0, "output": 0}, total_cost=0, error=None,
                   response=None, reflection=None)
        return run
    if run.get("session_id") is None:
        run["session_id"] = "sess_" + _digest("session", trace_id)
    if status == "running":
        run.update(disposition="in_progress", completed_at=None, duration_ms=0, error=None,
                   response=None, reflection=None)
        if not run.get("disposition_reason") or run["disposition_reason"] == "":
            run["disposition_reason"] = "Working on the request."
        return run
    outcome = outcome_of(kind, record)
    base = _RUN_FAILED if status == "failed" else _RUN_DEFAULT
    shown = {**base, **{k: v for k, v in outcome.items() if k != "status"}}
    if status == "completed":
        shown.setdefault("error", None)
        if "autopilot_sent" not in outcome:
            agent = store.get("agents", str(record.get("agent_id")))
            if agent is None:
                agent = store.get("deleted_agents", str(record.get("agent_id")))
            shown["autopilot_sent"] = bool(agent and agent.get("operation_mode") == "autopilot"
                                           and shown.get("response"))
    else:
        shown.setdefault("response", None)
        shown.setdefault("reflection", None)
    if "duration_ms" not in outcome:
        shown["duration_ms"] = max(0, at - start) if modes["mode"] == "time" else int(
            1000 * (modes["done_after"] - modes["running_after"]))
    if "total_cost" not in outcome:
        usage = shown["token_usage"]
        shown["total_cost"] = round(usage["input"] * INPUT_PRICE
                                    + usage["output"] * OUTPUT_PRICE, 6)
    if modes["mode"] == "time":
        completed = at
    else:
        completed = max(at, start + int(shown["duration_ms"]))
        if modes["mode"] == "manual":
            completed = at
    shown["completed_at"] = _stamp(completed)
    if "tool_trace" not in outcome:
        shown["tool_trace"] = list(record.get("tool_trace") or [])
    run.update(shown)
    return run


def _render_execution(store: Store, kind: Kind, record: Record, status: str, at: int,
                      modes: Mapping[str, Any]) -> Record:
    execution = dict(record)
    execution["status"] = status
    if status in kind.ends:
        outcome = outcome_of(kind, record)
        execution["ended_at"] = _stamp(at)
        if status == "FAILED":
            execution["error_summary"] = outcome.get(
                "error_summary", "Step 'run' failed: the step timed out")  # inferred (P13)
        else:
            execution["error_summary"] = outcome.get("error_summary")
    else:
        execution["ended_at"] = None
        execution["error_summary"] = None
    return execution


def _render_message(store: Store, kind: Kind, record: Record, status: str, at: int,
                    modes: Mapping[str, Any]) -> Record:
    message = dict(record)
    message["status"] = status
    if status == "failed":
        message["_error"] = outcome_of(kind, record).get(
            "error", "Twilio error 30006: landline or unreachable carrier")  # inferred (P12)
    return message


def _render_node(store: Store, kind: Kind, record: Record, status: str, at: int,
                 modes: Mapping[str, Any]) -> Record:
    node = dict(record)
    node["embed_status"] = status
    node["chunk_count"] = chunk_count(str(record.get("body", ""))) if status == "indexed" else 0
    if status == "failed":
        node["_error"] = outcome_of(kind, record).get(
            "error", "Indexing failed: the file could not be parsed")  # inferred (P14)
    return node


_RENDER = {
    "agent_runs": _render_run,
    "workflow_executions": _render_execution,
    "messages": _render_message,
    "kb_nodes": _render_node,
}


def settle(store: Store, table: str, record: Record, status: str,
           fields: Mapping[str, Any]) -> dict[str, Any]:
    """The record to store for a transition to `status` (checked by the caller), with the
    fields given: at an end state the record as the API then shows it, settled (no
    `_progress`); at the middle state the new floor, still moving."""
    kind = KINDS[table]
    if table == "workflow_executions" and "error" in fields:
        fields = {**{k: v for k, v in fields.items() if k != "error"},
                  "error_summary": fields["error"]}
    now_ms = store.clock.now_ms()
    modes = mode_of(store, table)
    start = start_of(kind, record)
    progress = dict(record.get("_progress") or {"start": start})
    if status in kind.ends:
        outcome = {**(progress.get("outcome") or {}), **fields, "status": status}
        progress["outcome"] = outcome
        moving = {**record, "_progress": progress}
        shown = dict(_RENDER[table](store, kind, moving, status, now_ms,
                                    {**modes, "mode": "manual"}))
        for name, value in fields.items():
            if name in shown or table == "agent_runs":
                shown[name] = value
        if table == "agent_runs" and "completed_at" not in fields:
            shown["completed_at"] = _stamp(now_ms)
            if "duration_ms" not in fields:
                shown["duration_ms"] = max(0, now_ms - start)
        shown.pop("_progress", None)
        return shown
    return {**record, kind.field: status, "_progress": progress}


# -- workflow events ---------------------------------------------------------------------


def events_of(store: Store, execution: Record, stored: list[Record],
              modes: Mapping[str, Any] | None = None,
              now_ms: int | None = None) -> list[Record]:
    """An execution's timeline as it stands now: its stored events, then (while it moves)
    the events its progress has reached, in sequence order."""
    kind = KINDS["workflow_executions"]
    shown = view(store, "workflow_executions", execution, modes, now_ms)
    if shown is execution:
        return stored
    if modes is None:
        modes = mode_of(store, "workflow_executions")
    status = shown["status"]
    start = start_of(kind, execution)
    events = sorted(stored, key=lambda e: e["sequence"])
    sequence = events[-1]["sequence"] if events else 0
    exec_id = execution["execution_id"]
    middle_at = start + int(modes["running_after"] * 1000)
    end_at = parse_timestamp(shown["ended_at"]) if shown.get("ended_at") else None
    planned: list[tuple[str, str | None, str | None, str | None, int]] = []
    if not events:
        planned.append(("TRIGGERED", None, None,
                        f"Triggered by {execution.get('trigger_source', 'a trigger')}", start))
    last = events[-1] if events else None
    open_step = last is not None and last["type"] == "STEP_STARTED"
    step_id = last["step_id"] if open_step and last else "run"
    step_name = last["step_name"] if open_step and last else "Run workflow"
    if status != kind.initial and not open_step and status != "CANCELLED":
        planned.append(("STEP_STARTED", step_id, step_name, None,
                        min(middle_at, end_at or middle_at)))
        open_step = True
    if end_at is not None:
        if status == "SUCCESS":
            if open_step:
                planned.append(("STEP_SUCCEEDED", step_id, step_name, None, end_at))
            planned.append(("COMPLETED", None, None, "Execution completed", end_at))
        elif status == "FAILED":
            if open_step:
                planned.append(("STEP_FAILED", step_id, step_name, shown["error_summary"],
                                end_at))
            planned.append(("FAILED", None, None, shown["error_summary"], end_at))
        else:
            planned.append(("CANCELLED", None, None, "Execution cancelled", end_at))
    floor = events[-1]["occurred_at"] if events else None
    for event_type, sid, sname, message, at in planned:
        sequence += 1
        occurred = _stamp(at)
        if floor is not None and occurred < floor:
            occurred = floor
        floor = occurred
        events.append({"id": f"we_{exec_id}_{sequence:02d}", "execution_id": exec_id,
                       "sequence": sequence, "type": event_type, "step_id": sid,
                       "step_name": sname, "message": message, "data": {},
                       "occurred_at": occurred})
    return events


# -- the clock's triggers ----------------------------------------------------------------


def timezone_problem(name: Any) -> str | None:
    """Why `name` is not an IANA timezone (None when it is one)."""
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError  # where a schedule is written

    if not isinstance(name, str) or not name or name.startswith("/") or ".." in name:
        return f"{name!r} is not an IANA timezone"
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        return f"{name!r} is not an IANA timezone (e.g. Europe/Vienna)"
    return None


_DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")


def _minutes(clock_time: str) -> int:
    """Minutes after midnight of a ClockTime such as '07:00 AM' or '19:30'."""
    text = clock_time.strip().upper()
    suffix = text[-2:] if text.endswith(("AM", "PM")) else ""
    hours, _, minutes = text[: len(text) - len(suffix)].strip().partition(":")
    hour, minute = int(hours), int(minutes or 0)
    if suffix:
        hour = hour % 12 + (12 if suffix == "PM" else 0)
    return hour * 60 + minute


def in_schedule(schedule: Mapping[str, Any] | None, now_ms: int) -> bool:
    """Whether an agent's `autopilot_schedule` is on at `now_ms`, read in its timezone (UTC
    when it names none). No schedule: always on."""
    from zoneinfo import ZoneInfo  # where a schedule is read

    if not schedule:
        return True
    zone = ZoneInfo(schedule.get("timezone") or "UTC")
    local = datetime.fromtimestamp(now_ms / 1000, tz=zone)
    day = _DAYS[local.weekday()]
    minute = local.hour * 60 + local.minute
    for entry in schedule.get("days", ()):
        if entry.get("day") != day or not entry.get("enabled"):
            continue
        for window in entry.get("ranges", ()):
            start, end = _minutes(window["start"]), _minutes(window["end"])
            if start <= minute < end or (end <= start and (minute >= start or minute < end)):
                return True
    return False


# Bounds what one clock move may dispatch (DECISIONS P16): a year of a per-minute cron is
# half a million runs; past this many per trigger per move, and this many in all, the later
# times are skipped.
MAX_CRON_FIRES = 100
MAX_CRON_FIRES_PER_MOVE = 1000


def cron_fires(expression: str, after_ms: int, until_ms: int,
               limit: int = MAX_CRON_FIRES) -> list[int]:
    """The instants (ms, UTC) a cron expression names in (after_ms, until_ms], at most
    `limit`; [] for an expression croniter does not read."""
    from croniter import croniter  # imported when a clock move meets a cron trigger

    try:
        it = croniter(expression, datetime.fromtimestamp(after_ms / 1000, tz=UTC))
    except (ValueError, KeyError, TypeError):
        return []
    fires: list[int] = []
    while len(fires) < limit:
        try:
            at = int(it.get_next(float) * 1000)
        except (ValueError, OverflowError):  # no such date (Feb 31), past the year 9999
            break
        if at > until_ms:
            break
        fires.append(at)
    return fires


# -- scripted outcomes -------------------------------------------------------------------

SCRIPT_KINDS = {"agents": "agent_runs", "workflows": "workflow_executions"}
SCRIPTS_LOG = "scripts"
CLOCK_LOG = "clock"
MAX_LOGGED = 200  # consumed and missed dispatches kept per session (the oldest dropped)


def script_key(kind: str, target: str) -> str:
    return f"script:{kind}:{target}"


def take_outcome(store: Store, kind: str, target: str, record_id: str
                 ) -> dict[str, Any] | None:
    """The next scripted outcome for a dispatch of `target` (an agent or workflow id),
    consumed (written), or None: a miss, listed. Run in the dispatch's write."""
    script = store.get(MOCK_TABLE, script_key(kind, target))
    log = store.get(MOCK_TABLE, SCRIPTS_LOG) or {"id": SCRIPTS_LOG, "consumed": [],
                                                  "misses": [], "missed": 0}
    at = store.now()
    if script is not None and script["used"] < len(script["outcomes"]):
        index = script["used"]
        store.insert(MOCK_TABLE, {**script, "used": index + 1})
        entry = {"kind": kind, "id": target, "record": record_id, "index": index, "at": at}
        store.insert(MOCK_TABLE, {**log, "consumed": [*log["consumed"], entry][-MAX_LOGGED:]})
        return dict(script["outcomes"][index])
    entry = {"kind": kind, "id": target, "record": record_id, "at": at,
             "why": "no script" if script is None else
             f"script exhausted after {len(script['outcomes'])} outcome(s)"}
    store.insert(MOCK_TABLE, {**log, "misses": [*log["misses"], entry][-MAX_LOGGED:],
                              "missed": log.get("missed", 0) + 1})
    return None


def scripts_of(store: Store) -> dict[str, Any]:
    """Every script of the session, what was consumed and the dispatches that missed."""
    found: dict[str, Any] = {"agents": {}, "workflows": {}}
    for record in store.all(MOCK_TABLE):
        if record["id"].startswith("script:"):
            _, kind, target = record["id"].split(":", 2)
            found[kind][target] = {"outcomes": record["outcomes"], "consumed": record["used"],
                                   "remaining": len(record["outcomes"]) - record["used"]}
    log = store.get(MOCK_TABLE, SCRIPTS_LOG) or {}
    found["consumed"] = list(log.get("consumed", ()))
    found["misses"] = list(log.get("misses", ()))
    found["missed"] = log.get("missed", 0)
    return found


def new_run(store: Store, agent: Record, trigger: Record, payload: Any, *,
            contact_id: str = "", conversation_id: str = "", at_ms: int | None = None,
            cause: str | None = None) -> Record:
    """Insert a dispatched run of `agent` by `trigger` (a manual dispatch, a cron time) and
    return it: accepted, its outcome fields at their "not yet known" values, its start and
    outcome (the agent's next scripted one, or the default: a listed miss) in `_progress`."""
    run_key = store.new_id("ar")
    created = store.now() if at_ms is None else _stamp(at_ms)
    progress: dict[str, Any] = {"start": parse_timestamp(created)}
    if cause is not None:
        progress["cause"] = cause
    outcome = take_outcome(store, "agents", agent["id"], run_key)
    if outcome is not None:
        progress["outcome"] = outcome
    return store.insert("agent_runs", {
        "id": run_key,
        "run_id": store.new_id("run_"),
        "agent_id": agent["id"],
        "workspace_id": agent["workspace_id"],
        # A dispatched run is accepted and progresses on the mock's clock (spec/DECISIONS.md
        # E3, P1-P20); the contact/conversation come from the payload when it names them.
        "status": "accepted",
        "disposition": "pending",
        "disposition_reason": "",
        "autopilot_sent": False,
        "proposal_outcome": None,
        "contact_id": contact_id,
        "conversation_id": conversation_id,
        "trigger_id": trigger["id"],
        "error": None,
        "duration_ms": 0,
        "token_usage": {"input": 0, "output": 0},
        "total_cost": 0,
        "trace_id": hashlib.blake2b(run_key.encode(), digest_size=16).hexdigest(),
        "created_at": created,
        "completed_at": None,
        # Inferred: the dispatch is the run's trigger event; an accepted run has no session,
        # reply, reasoning or tool calls yet (spec/DECISIONS.md E25).
        "session_id": None,
        "trigger_event_id": store.new_id("te"),
        "response": None,
        "reflection": None,
        "tool_trace": [],
        "_payload": payload,
        "_progress": progress,
    })


def dispatch_execution(store: Store, record: Record, now: str) -> dict[str, Any]:
    """A workflow execution dispatched now: STARTED, not ended, its start and outcome (the
    workflow's next scripted one, or the default: a listed miss) in `_progress`."""
    progress: dict[str, Any] = {"start": parse_timestamp(now)}
    outcome = take_outcome(store, "workflows", str(record.get("workflow_id")),
                           str(record.get("execution_id")))
    if outcome is not None:
        progress["outcome"] = outcome
    return {**record, "status": "STARTED", "started_at": now, "ended_at": None,
            "error_summary": None, "_progress": progress}


def fire_crons(store: Store, before_ms: int, after_ms: int) -> int:
    """Dispatch a run for every time an enabled cron trigger of an active agent names in
    (before_ms, after_ms]: the clock passed it. Each run starts at its cron time and
    progresses from there (DECISIONS P15); its cause is kept (`_progress.cause`). How many
    were dispatched."""
    if after_ms <= before_ms:
        return 0
    fired = 0
    caused: list[dict[str, Any]] = []
    for agent in list(store.all("agents")):
        if not agent.get("enabled", True) or agent.get("operation_mode") == "inactive":
            continue
        for trigger in agent.get("triggers") or ():
            if trigger.get("type") != "cron" or not trigger.get("enabled", True):
                continue
            schedule = (trigger.get("config") or {}).get("schedule")
            if not isinstance(schedule, str):
                continue
            room = min(MAX_CRON_FIRES, MAX_CRON_FIRES_PER_MOVE - fired)
            if room <= 0:
                break
            for at in cron_fires(schedule, before_ms, after_ms, room):
                cause = f"clock: cron trigger {trigger['id']} ({schedule}) at {_stamp(at)}"
                run = new_run(store, agent, trigger, {}, at_ms=at, cause=cause)
                caused.append({"at": _stamp(at), "table": "agent_runs", "id": run["id"],
                               "cause": cause})
                fired += 1
    if caused:
        log = store.get(MOCK_TABLE, CLOCK_LOG) or {"id": CLOCK_LOG, "entries": []}
        store.insert(MOCK_TABLE, {**log, "entries": [*log["entries"], *caused][-MAX_LOGGED:]})
    return fired


def clock_log(store: Store) -> list[dict[str, Any]]:
    """What the clock caused in this session (cron dispatches), oldest first."""
    found = store.get(MOCK_TABLE, CLOCK_LOG)
    return list(found["entries"]) if found else []


# -- what a test sets (the control API, the fixture) -------------------------------------


class Refused(ValueError):
    """A setting or transition refused: `status` 400 (a field), 404 (no such record) or 409
    (not allowed from the record's state); the message names the field or the state."""

    def __init__(self, status: int, message: str, reason: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason  # the control API's code (`no_record`, `unknown_table`)


def checked_mode(table: str, value: Any) -> dict[str, Any]:
    """A kind's mode settings (`{"mode", "running_after", "done_after"}`, durations in
    seconds, omitted ones at the kind's current or default value) checked, or Refused 400."""
    if table not in KINDS:
        raise Refused(400, f"field 'kind': {table!r} is not one of {', '.join(KINDS)}")
    if not isinstance(value, Mapping):
        raise Refused(400, f"field {table!r}: an object with mode, running_after, done_after")
    unknown = sorted(set(value) - {"mode", "running_after", "done_after"})
    if unknown:
        raise Refused(400, f"field {table}.{unknown[0]}: not a progression setting "
                           "(mode, running_after, done_after)")
    kind = KINDS[table]
    mode = value.get("mode", "time")
    if mode not in MODES:
        raise Refused(400, f"field {table}.mode: {mode!r} is not one of {', '.join(MODES)}")
    found = {"mode": mode, "running_after": value.get("running_after", kind.running_after),
             "done_after": value.get("done_after", kind.done_after)}
    for name in ("running_after", "done_after"):
        seconds = found[name]
        if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not (
                math.isfinite(seconds) and 0 <= seconds <= 366 * 86400):
            raise Refused(400, f"field {table}.{name}: seconds from 0 to 31622400 "
                               f"(a year), not {seconds!r}")
    if found["running_after"] > found["done_after"]:
        raise Refused(400, f"field {table}.running_after: {found['running_after']} is after "
                           f"done_after ({found['done_after']})")
    return found


def set_modes(store: Store, changes: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Set kinds' modes (checked first: nothing is written when one is refused)."""
    modes = modes_of(store)
    checked = {table: checked_mode(table, {**modes.get(table, {}), **value}
                                   if isinstance(value, Mapping) else value)
               for table, value in changes.items()}
    modes.update(checked)
    store.insert(MOCK_TABLE, {"id": PROGRESSION_KEY, "kinds": modes})
    return modes


def transition(store: Store, table: str, key: str, status: Any,
               fields: Mapping[str, Any]) -> Record:
    """Move a record to `status` as a test asks (Stripe's test helpers): forward only, from
    the state it reads now. Refused 404 (no such record), 400 (a field), 409 (naming the
    state it is in). Returns the record as stored after."""
    kind = KINDS.get(table)
    if kind is None:
        raise Refused(404, f"no progression for table {table!r}; tables: {', '.join(KINDS)}",
                      "unknown_table")
    record = store.get(table, key)
    if record is None:
        raise Refused(404, f"{table} has no record {key!r}", "no_record")
    if not kind.applies(record):
        raise Refused(409, f"{table} {key!r} does not progress (an inbound message, a folder)")
    if status not in kind.order:
        raise Refused(400, f"field 'status': {status!r} is not one of {', '.join(kind.order)}")
    allowed = set(TRANSITION_FIELDS[table])
    for name in fields:
        if name not in allowed:
            raise Refused(400, f"field {name!r}: a transition of {table} sets "
                               f"{', '.join(sorted(allowed))}")
    current = view(store, table, record)[kind.field]
    ends = set(kind.ends) - {kind.middle} if kind.middle in kind.ends else set(kind.ends)
    if current in ends or (kind.middle in kind.ends and current == kind.middle
                           and status not in kind.ends[1:]):
        raise Refused(409, f"{table} {key!r} is {current}; it cannot move to {status}")
    if _rank(kind, status) <= _rank(kind, current):
        raise Refused(409, f"{table} {key!r} is {current}; it cannot move back or stay "
                           f"({status})")
    settled = settle(store, table, {**record, kind.field: current}, status, fields)
    if table == "workflow_executions" and "_progress" not in settled:
        _store_timeline(store, record, settled)
    return store.insert(table, settled)


def _store_timeline(store: Store, moving: Record, settled: Record) -> None:
    """A settled execution's timeline, stored: the events it reached on its way and those of
    its end (at the transition's instant), so that its stored timeline is its whole history."""
    kind = KINDS["workflow_executions"]
    start = start_of(kind, moving)
    end = parse_timestamp(settled["ended_at"])
    done = max(0, end - start) / 1000
    session = mode_of(store, "workflow_executions")
    modes = {"mode": "time", "running_after": min(session["running_after"], done),
             "done_after": done}
    shown = {**settled, "_progress": {"start": start, "outcome": {
        "status": settled["status"], "error_summary": settled["error_summary"]}}}
    key = settled["execution_id"]
    index = store.index("workflow_events", ("execution_id",), ("sequence",))
    stored = store.records("workflow_events", [k[-1] for k in index.keys(
        (key,), after=None, descending=False)])
    known = {e["id"] for e in stored}
    for event in events_of(store, shown, list(stored), modes, end):
        if event["id"] not in known:
            store.insert("workflow_events", event)


# The fields a transition (and an outcome) may set, per kind, besides `status`.
TRANSITION_FIELDS: dict[str, tuple[str, ...]] = {
    "agent_runs": ("error", "response", "reflection", "tool_trace", "disposition",
                   "disposition_reason", "token_usage", "duration_ms", "total_cost",
                   "autopilot_sent", "proposal_outcome"),
    "workflow_executions": ("error", "error_summary"),
    "messages": ("error",),
    "kb_nodes": ("error",),
}
