"""Delta debugging on its own: the sub-list it returns still fails, is 1-minimal, keeps the
order, and costs few questions."""

from __future__ import annotations

import math

from hypothesis import example, given, settings
from hypothesis import strategies as st

from mockserver.robust.ddmin import ddmin


@st.composite
def plans_with_causes(draw: st.DrawFn) -> tuple[list[int], list[frozenset[int]]]:
    """A plan of distinct items and one to three causes: sets of its items that fail together."""
    size = draw(st.integers(1, 40))
    items = list(range(size))
    causes = draw(st.lists(st.frozensets(st.sampled_from(items), min_size=1, max_size=3),
                           min_size=1, max_size=3))
    return items, causes


def failing(causes: list[frozenset[int]], asked: list[list[int]] | None = None):  # type: ignore[no-untyped-def]
    def fails(sub: list[int]) -> bool:
        if asked is not None:
            asked.append(sub)
        present = set(sub)
        return any(cause <= present for cause in causes)
    return fails


@settings(max_examples=150, deadline=None)
@given(plans_with_causes())
def test_the_result_still_fails_and_no_single_item_can_go(case: tuple[list[int], list[frozenset[int]]]) -> None:
    items, causes = case
    fails = failing(causes)
    result = ddmin(items, fails)
    assert fails(result)
    assert result == [item for item in items if item in set(result)]  # a sub-list, order kept
    for item in result:  # 1-minimal
        assert not fails([other for other in result if other != item]), (result, item)


@settings(max_examples=50, deadline=None)
@given(plans_with_causes())
@example((list(range(8)), [frozenset({2, 4, 6})]))  # chunks of a kept complement, asked before
def test_never_asks_about_the_whole_plan_the_empty_plan_or_the_same_sub_list_twice(
        case: tuple[list[int], list[frozenset[int]]]) -> None:
    items, causes = case
    asked: list[list[int]] = []
    ddmin(items, failing(causes, asked))
    assert items not in asked and [] not in asked
    assert len({tuple(sub) for sub in asked}) == len(asked)


def test_one_cause_among_many_is_found_in_logarithmic_questions() -> None:
    for size in (2, 7, 64, 100):
        for culprit in range(size):
            asked: list[list[int]] = []
            assert ddmin(list(range(size)), failing([frozenset({culprit})], asked)) == [culprit]
            assert len(asked) <= 2 * math.ceil(math.log2(size)) + 1, (size, culprit, len(asked))


def test_two_items_that_only_fail_together_both_stay() -> None:
    # The two halves of the plan each pass: only removing smaller chunks (complements) helps.
    items = list(range(16))
    assert ddmin(items, failing([frozenset({2, 13})])) == [2, 13]


def test_items_need_not_be_hashable() -> None:
    plan = [{"kind": "null", "n": i} for i in range(9)]
    assert ddmin(plan, lambda sub: {"kind": "null", "n": 5} in sub) == [{"kind": "null", "n": 5}]


def test_a_single_item_or_empty_plan_comes_back_unasked() -> None:
    def never(sub: list[object]) -> bool:
        raise AssertionError("asked")
    assert ddmin([1], never) == [1]
    assert ddmin([], never) == []
