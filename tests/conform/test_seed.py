"""`--seed N` alone reproduces a run's requests: two runs with the same seed against fresh
mocks send the same requests (the mocks' journals compared, bodies included); another seed
sends others.

The mocks here answer alike: their clock is frozen, their cursor secret fixed and their
storage secret pinned (without it, new ids differ on every start: DECISIONS H20). A mock on a
running clock does not: the records it creates carry the time, and schemathesis reuses values
it captured from responses (`updated_since=`, `start=`/`end=` ...), so against it two runs of
one seed differ in those values and, where a value decides an answer (a `start` after an
`end` is refused), in the requests that follow. What the gate itself sends must depend on the
seed alone: the write laws' text values once carried a random tag, so every body they sent,
and where their records sorted, differed between runs of one seed."""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import gate, served

DETERMINISTIC: dict[str, Any] = {"frozen_clock": "2026-08-01T12:00:00Z", "cursor_secret": b"s" * 32,
                 "storage_secret": "seed-test", "journal_size": 100_000}
RUNS = {
    "read-only fuzzing and the laws": ["--phases", "fuzzing", "--checks", "laws",
                                       "--include", "listTickets", "--max-examples", "10"],
    "the stateful phase through the links": [
        "--phases", "stateful", "--checks", "none", "--allow-writes", "--max-examples", "3",
        "--include", "re:^(createAgent|getAgent|updateAgent)$"],
    # The write laws (the values they write), every unit phase with writes, and lists paged
    # with cursors: where full runs of one seed differed.
    "writes: the laws and the unit phases": [
        "--phases", "fuzzing", "--checks", "laws,pagination", "--allow-writes",
        "--max-examples", "3",
        "--include", "re:^(listSkills|getSkill|updateSkill|createSkill|deleteSkill)$"],
}


def _requests(seed: str, args: list[str]) -> list[tuple[Any, ...]]:
    with served(**DETERMINISTIC) as (url, mock):
        result = gate(url, *args, "--seed", seed)
        assert result.seed == int(seed)
        return [(e.method, e.path, e.query_string, e.body) for e in mock.journal]


@pytest.mark.parametrize("name", list(RUNS))
def test_the_same_seed_sends_the_same_requests(name: str) -> None:
    args = RUNS[name]
    first, again = _requests("7", args), _requests("7", args)
    assert len(first) > 20
    assert first == again, next((a, b) for a, b in zip(first, again, strict=False) if a != b)


def test_another_seed_sends_other_requests() -> None:
    """The comparison above can fail: the seed reaches the generated requests."""
    args = RUNS["read-only fuzzing and the laws"]
    assert _requests("8", args) != _requests("7", args)


def test_a_run_without_a_seed_reports_the_one_it_used() -> None:
    with served() as (url, _):
        from mockserver.conform.cli import parse_config
        from mockserver.conform.runner import run

        config, _ = parse_config(["--base-url", url, "--token", "mock-write-token",
                                  "--rate", "0", "--quiet", "--phases", "none",
                                  "--checks", "pagination", "--include", "listSkills"])
        result = run(config)
    assert isinstance(result.seed, int) and result.as_dict()["seed"] == result.seed
    assert result.as_dict()["hypothesis_database"] == "none"
