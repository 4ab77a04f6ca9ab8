"""The pytest plugin's public name (the `pytest11` entry point and `-p mockserver.pytest_plugin`).

The plugin lives in `mockserver.testing.plugin`; this module *is* that module once imported,
so hooks, fixtures and module state exist once whichever name loaded them.
"""

import sys

from .testing import plugin as _plugin

sys.modules[__name__] = _plugin
