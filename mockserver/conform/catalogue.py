"""The whole registry: importing this module imports every module that declares checks or
registers routines (`registry.py`), so `registry.CHECKS` and `registry.ROUTINES` are complete.

The runner runs each step's routines from here; `--checks` takes its choices from the options
the checks declare; the README's catalogue is `registry.catalogue_markdown()`
(`python -m mockserver.conform.catalogue` prints it; a test holds the README to it).
"""

from __future__ import annotations

from . import (  # noqa: F401  (imported for what they register)
    auth_matrix,
    checks,
    gate,
    law_creates,
    law_failed_writes,
    law_hierarchy,
    law_patches,
    laws,
    pagination,
    phases,
    ratelimit_probe,
    runner,
    state_rules,
)
from .registry import CHECKS, OPTIONS, catalogue_markdown

__all__ = ["catalogue_markdown", "check_options"]

def check_options() -> tuple[str, ...]:
    """The `--checks` choices: the options the declared checks name, in a run's order."""
    named = {check.option for check in CHECKS.values()}
    return tuple(option for option in OPTIONS if option in named)


if __name__ == "__main__":
    print(catalogue_markdown(), end="")
