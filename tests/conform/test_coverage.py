"""Status coverage: per operation, the documented statuses observed and those never seen;
--min-status-coverage fails a run below the chosen share."""

from __future__ import annotations

from mockserver.conform.report import format_summary

from .conftest import gate, served

ARGS = ["--phases", "none", "--checks", "pagination", "--include", "listSkills"]


def test_the_report_lists_observed_and_missing_statuses() -> None:
    with served() as (url, _):
        result = gate(url, *ARGS)
    cover = result.coverage["listSkills"]
    assert cover["observed"] == [200, 400]  # the walks, and limit=0/101/forged cursor
    assert 401 in cover["missing"]
    # 429 and 431: nothing in this run could reach them; listed apart with the reason.
    assert cover["unreachable"] == [429, 431] and 429 not in cover["missing"]
    assert set(result.coverage) == {"listSkills"}
    summary = format_summary(result)
    assert "listSkills: 401, 403, 404 (observed 200, 400)" in summary
    assert "429 on 1 operation(s): needs a burst past the rate limit: --rate-limit-probe" \
        in summary
    assert result.as_dict()["status_coverage"]["percent"] == round(100 * 2 / 5, 1)
    assert result.exit_code == 0


def test_min_status_coverage_fails_a_run_below_it() -> None:
    with served() as (url, _):
        below = gate(url, *ARGS, "--min-status-coverage", "50")
        above = gate(url, *ARGS, "--min-status-coverage", "25")
    assert [v.check for v in below.errors] == ["status_coverage"]
    assert "40.0%" in below.errors[0].message
    assert below.exit_code == 1
    assert above.exit_code == 0 and "coverage" in above.families
