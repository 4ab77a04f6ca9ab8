"""The frozen-clock mock and its client (`module_mock`, `api`): tests/frozen_api.py."""

from tests.frozen_api import api, module_mock

__all__ = ["api", "module_mock"]
