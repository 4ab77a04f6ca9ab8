"""Robustness mode for pytest: `@pytest.mark.mock_api_robust(...)` runs a test's body under
hypothesis, each example in a fresh copy of the test's mock session with a drawn variation
plan; the test's code does not change.

    @pytest.mark.mock_api_robust(kinds=["null", "rate-limit"], operations=["listTickets"],
                                 max_examples=30, deadline=None)
    def test_sync(mock_api):
        sync_tickets(mock_api.base_url, mock_api.token())  # the code under test

On failure hypothesis shrinks the plan (drops items, simplifies each) and the report ends with
the minimal plan in words and a one-line replay: the same test run once on exactly that plan,
by `--mock-api-robust-replay=JSON` or the marker's `replay=`. Hypothesis's example database
keeps failing plans per test as usual. Needs hypothesis (the `robust` extra: without it the
test fails naming the install command) and the in-process mock: the plan is drawn over the
session's records, so under a real server or a mock reached over HTTP the test skips, naming
why.
"""

from __future__ import annotations

import inspect
import json
import shlex
from collections.abc import Callable
from typing import Any

import pytest

from .catalogue import catalogue_for
from .control import clear_variations, vary
from .runtime import describe_plan

__all__ = ["MARKER", "RobustMode", "add_options", "configure"]

MARKER = "mock_api_robust"
REPLAY_OPTION = "--mock-api-robust-replay"
DEFAULT_EXAMPLES = 30
_ARGUMENTS = ("kinds", "operations", "max_examples", "deadline", "max_items", "replay")


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("mock_api")
    group.addoption(REPLAY_OPTION, default=None, metavar="JSON",
                    help="robustness mode: run each selected mock_api_robust test once on "
                         "exactly this plan (the JSON list a failure printed)")


def configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{MARKER}(kinds=None, operations=None, max_examples={DEFAULT_EXAMPLES}, "
        "deadline=None, max_items=6, replay=None): run the test's body under hypothesis, each "
        "example in a fresh mock session with a drawn variation plan (robustness mode)")
    if not config.pluginmanager.has_plugin("mock_api_robust"):
        config.pluginmanager.register(RobustMode(), "mock_api_robust")


def _replay_text(plan: list[dict[str, Any]]) -> str:
    return json.dumps([{k: v for k, v in item.items() if k != "describe"} for item in plan],
                      ensure_ascii=False, separators=(",", ":"))


class RobustMode:
    """The hook that runs a marked test's body over plans."""

    @pytest.hookimpl(tryfirst=True)
    def pytest_pyfunc_call(self, pyfuncitem: pytest.Function) -> bool | None:
        marker = pyfuncitem.get_closest_marker(MARKER)
        if marker is None:
            return None
        options = dict(marker.kwargs)
        unknown = sorted(set(options) - set(_ARGUMENTS))
        if unknown or marker.args:
            raise pytest.UsageError(f"{MARKER}: unknown argument {unknown[:1] or marker.args}"
                                    f" (arguments: {', '.join(_ARGUMENTS)})")
        api = pyfuncitem.funcargs.get("mock_api")
        if api is None or inspect.iscoroutinefunction(pyfuncitem.obj):
            pytest.fail(f"{MARKER} needs a (sync) test that uses the mock_api fixture",
                        pytrace=False)
        # only the in-process control holds the mock's state (testing/control.py); skipped
        # elsewhere, as every mock-only helper is (decision U16)
        if getattr(getattr(api, "_control", None), "state", None) is None:
            real = not getattr(api, "is_mock", True)
            where = ("--mock-api-base-url targets a real server" if real else
                     "this run reaches the mock over HTTP (--mock-api-share-server, "
                     "--mock-api-container or --mock-api-server)")
            pytest.skip(f"{MARKER} needs the in-process mock, whose records its plans are "
                        f"drawn over; {where}")
        try:
            import hypothesis  # noqa: F401  (the robust extra)
        except ImportError:
            pytest.fail(f"{MARKER} needs hypothesis, which is not installed: "
                        "pip install 'workspace-api-mock[robust]' (from a clone: "
                        "pip install '.[robust]')", pytrace=False)
        argnames = pyfuncitem._fixtureinfo.argnames
        body = pyfuncitem.obj
        funcargs = pyfuncitem.funcargs

        def call() -> None:
            body(**{name: funcargs[name] for name in argnames})

        replay = pyfuncitem.config.getoption(REPLAY_OPTION) or options.get("replay")
        _Run(pyfuncitem, api, call, options).run(replay)
        return True


class _Run:
    """One marked test: its session's origin, the plans run, the report."""

    def __init__(self, item: pytest.Function, api: Any, call: Callable[[], None],
                 options: dict[str, Any]) -> None:
        self.item, self.api, self.call, self.options = item, api, call, options
        self.state = api.state
        self.mock = api.mock
        self.origin = self.state.snapshot("robust-origin")
        self.original_base = self.state.store.base
        self.last: list[dict[str, Any]] = []

    def run(self, replay: Any) -> None:
        try:
            if replay is not None:
                plan = json.loads(replay) if isinstance(replay, str) else list(replay)
                self.example(plan)
            else:
                self.explore()
        except BaseException as exc:
            if isinstance(exc, (KeyboardInterrupt, pytest.skip.Exception)):
                raise
            exc.add_note(self.report())
            raise
        finally:
            clear_variations(self.mock, self.state)
            self.state.reset_over(self.original_base)

    def explore(self) -> None:
        # hypothesis is imported only here: the plugin loads without it (the `robust` extra)
        from hypothesis import HealthCheck, given, settings

        from .strategies import plans

        options = self.options
        catalogue = catalogue_for(self.mock.spec)
        try:
            strategy = plans(catalogue, self.state.store, kinds=options.get("kinds"),
                             operations=options.get("operations"),
                             max_items=options.get("max_items", 6))
        except ValueError as exc:
            raise pytest.UsageError(f"{MARKER}: {exc}") from None

        @settings(max_examples=options.get("max_examples", DEFAULT_EXAMPLES),
                  deadline=options.get("deadline"),
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                         HealthCheck.filter_too_much])
        @given(plan=strategy)
        def robust(plan: list[dict[str, Any]]) -> None:
            self.example(plan)

        # Hypothesis's database keys a failing example by the test, not by this wrapper.
        given_test: Any = robust  # hypothesis's attributes on the test it wraps
        given_test.hypothesis.inner_test._hypothesis_internal_add_digest = (
            self.item.nodeid.encode())
        robust()

    def fresh(self) -> None:
        """The test's session as the test found it (its records, ids, settings), with no
        journal, faults or plan: a fresh session for each example."""
        self.state.reset_over(self.origin.base)

    def example(self, plan: list[dict[str, Any]]) -> None:
        self.last = plan
        self.fresh()
        self.last = vary(self.mock, self.state, {"plan": plan}).plan
        self.call()
        dispatch = getattr(self.api, "_dispatch", None)
        if dispatch is not None:  # the mock failed (a varied answer the self-check refused)
            dispatch.wait_idle()
            error = dispatch.take_error()
            if error is not None:
                raise error

    def report(self) -> str:
        if not self.last:
            return "robustness mode: the test failed with faithful answers (an empty plan)"
        option = f"{REPLAY_OPTION}={shlex.quote(_replay_text(self.last))}"
        return ("robustness mode: the minimal plan that breaks the test:\n"
                f"{describe_plan(self.last)}\n"
                f"replay: pytest {shlex.quote(self.item.nodeid)} {option}")
