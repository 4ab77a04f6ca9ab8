"""Robustness mode: answers varied within the document (issue 31).

A *variation plan* is a list of independent items, each one way an answer may differ from the
mock's faithful answer and still be valid against the document: a nullable field null, an
array empty, a field the document does not list, a page of one, a documented error status, a
429 with a long `Retry-After`, a slow or dropped answer. `catalogue` reads what the document
allows, `plan` checks, draws and describes items, `runtime` applies a plan to a session, and
`pytest` runs a test's body under hypothesis over drawn plans (`strategies`).

Robustness mode (`mockserver/robust/`)
--------------------------------------

A session may carry a variation plan (`MockState.variations`, a `runtime.Variations`). Its
content items are written into the session's store layer when it is set (and put back when it
is cleared), so the handlers answer them as any record. The pipeline runs a varied
session's request through `Variations.answer` in the core's place (after the fault layer,
before the journal): it counts the operation's call, answers an answer item's call itself
(a documented error in its documented shape, a 429, a 5xx, a delay then the core, a dropped
connection), else runs the core (self-checked as usual) with a paging item's query
rewritten, adds the extra fields of the records the body holds, self-checks the result with
exactly those fields removed, and leaves the indexes of the items that varied it for the
journal entry (`Exchange.varied`).
Sessions without a plan never reach this code. Plans are held in one process: on a state
shared through Redis a PUT answers 409 saying why (`control.LOCAL_ONLY`, asked of the state
by `MockState.check_local`; DECISIONS V11). The pytest marker runs the test's body under
hypothesis, `MockState.reset_over`-ing the session to a snapshot taken when the body starts before
each example.
The CLI (`cli.py`) drives the same control API from outside, for a command in any language:
it serves the mock in a thread on a free loopback port, and per run creates a session, PUTs a
seed, runs the command, GETs the applied items and deletes the session; a failure is reduced by
re-running the command on explicit sub-plans (`ddmin.py`, which knows nothing of the mock).
"""
