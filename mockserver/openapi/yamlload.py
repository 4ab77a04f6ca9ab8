"""YAML as JSON sees it: the C loader when available, and no implicit timestamps.

PyYAML turns an unquoted `2026-10-14T09:31:07.000Z` into a `datetime`; the API's timestamps
are strings, so fixture and document authors should not have to quote every one of them.
"""

from __future__ import annotations

from typing import Any

import yaml

__all__ = ["load_yaml"]

_Base: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_Base):
    pass


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in _Base.yaml_implicit_resolvers.items()
}


def load_yaml(data: bytes | str) -> Any:
    return yaml.load(data, Loader=_Loader)  # a safe loader: no arbitrary objects
