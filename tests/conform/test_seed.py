"""`--seed N` alone reproduces a run's requests: two runs with the same seed against fresh
mocks send the same requests (the mocks' journals compared); another seed sends others."""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import gate, served

RUNS = {
    "read-only fuzzing and the laws": ["--phases", "fuzzing", "--checks", "laws",
                                       "--include", "listTickets", "--max-examples", "10"],
    "the stateful phase through the links": [
        "--phases", "stateful", "--checks", "none", "--allow-writes", "--max-examples", "3",
        "--include", "re:^(createAgent|getAgent|updateAgent)$"],
}


def _requests(seed: str, args: list[str]) -> list[tuple[Any, ...]]:
    with served() as (url, mock):
        result = gate(url, *args, "--seed", seed)
        assert result.seed == int(seed)
        return [(e.method, e.path, e.query_string, e.body) for e in mock.journal]


@pytest.mark.parametrize("name", list(RUNS))
def test_the_same_seed_sends_the_same_requests(name: str) -> None:
    args = RUNS[name]
    first, again = _requests("7", args), _requests("7", args)
    assert len(first) > 20
    assert first == again


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
