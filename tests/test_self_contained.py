"""The package is self-contained: the documents (and so the /docs page that renders them) cite
only files the package ships, spec/ and fixtures/ (pyproject's force-include)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ("spec", "fixtures")  # the wheel's mockserver/_data/
CITATION = re.compile(r"(?<![\w./-])[\w./-]+\.(?:md|ya?ml|json)\b")


def _shipped(name: str) -> bool:
    if name.startswith("/"):  # a URL path of the mock (/openapi.json), not a file
        return True
    path = Path(name)
    if path.parts[0] in SHIPPED:
        return (ROOT / path).is_file()
    return any((ROOT / folder / path).is_file() for folder in SHIPPED)


@pytest.mark.parametrize("document", ["spec/openapi.yaml", "spec/control-openapi.yaml",
                                      "mockserver/standalone/docs.py"])
def test_documents_cite_only_shipped_files(document: str) -> None:
    text = (ROOT / document).read_text(encoding="utf-8")
    cited = sorted(set(CITATION.findall(text)))
    missing = [name for name in cited if not _shipped(name)]
    assert not missing, f"{document} cites files the package does not ship: {missing}"
