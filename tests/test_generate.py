"""The deterministic generator: same seed, same bytes; and the output is a valid dataset."""

from __future__ import annotations

from pathlib import Path

import pytest
import test_fixtures as consistency

from mockserver.data.fixtures import Dataset, load_dataset
from mockserver.data.generate import COPIED_TABLES, GENERATED_TABLES, generate
from mockserver.openapi.spec import Spec, load_spec

SCALE = 300


@pytest.fixture(scope="module")
def spec() -> Spec:
    return load_spec()


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("generated")
    generate(SCALE, 7, out)
    return out


@pytest.fixture(scope="module")
def dataset(generated: Path, spec: Spec) -> Dataset:
    return load_dataset([generated], spec=spec)


def _files(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


def test_same_seed_gives_byte_identical_files(generated: Path, tmp_path: Path) -> None:
    generate(SCALE, 7, tmp_path)
    assert _files(tmp_path) == _files(generated)


def test_different_seed_differs(generated: Path, tmp_path: Path) -> None:
    generate(SCALE, 8, tmp_path)
    again = _files(tmp_path)
    first = _files(generated)
    assert again.keys() == first.keys()
    assert again["contacts.json"] != first["contacts.json"]
    assert again["workspaces.json"] == first["workspaces.json"]  # copied configuration


def test_writes_every_table_as_json(generated: Path) -> None:
    names = {p.name for p in generated.iterdir()}
    assert names == {f"{t}.json" for t in (*COPIED_TABLES, *GENERATED_TABLES, "tokens")}


def test_output_loads_with_scale_contacts(dataset: Dataset) -> None:
    assert len(dataset.tables["contacts"]) == SCALE
    assert set(dataset.tables["conversations"]) == set(dataset.tables["contacts"])
    assert SCALE * 1.5 <= len(dataset.tables["messages"]) <= SCALE * 3
    assert SCALE * 0.15 <= len(dataset.tables["tickets"]) <= SCALE * 0.45
    assert SCALE * 0.35 <= len(dataset.tables["reservations"]) <= SCALE * 0.65
    for table in ("ticket_notes", "calls", "appointments", "helpdesk_tickets", "escalations", "agent_runs",
                  "airbnb_transactions", "conversation_summaries"):
        assert dataset.tables[table], table
    assert {c["workspace_id"] for c in dataset.tables["contacts"].values()} == {
        "ws_harborview", "ws_alpine", "ws_desert"}
    assert [t["token"] for t in dataset.tokens] == [
        "mock-write-token", "mock-read-token", "mock-colleague-token", "mock-other-token"]


@pytest.mark.parametrize("check", [
    consistency.test_timestamps_are_in_the_past_and_ordered,
    consistency.test_contacts_and_conversations_agree,
    consistency.test_ticket_derived_fields,
    consistency.test_scoped_records_share_their_contacts_workspace,
    consistency.test_escalations_and_runs,
    consistency.test_reservations,
    consistency.test_ids_are_readable_prefixed_and_bounded,
], ids=lambda f: f.__name__.removeprefix("test_"))
def test_generated_data_is_consistent(dataset: Dataset, check) -> None:  # type: ignore[no-untyped-def]
    check(dataset)


def test_unquoted_fixture_timestamps_survive_the_generator(
    tmp_path: Path, spec: Spec, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One YAML reading (yamlload.py) for fixtures, generator and plugin: a timestamp left
    unquoted in a fixture stays the string it reads as, through the generator too."""
    import re
    import shutil

    import mockserver.data.generate as generate_module
    from mockserver.data.fixtures import default_fixtures_dir

    base = tmp_path / "fixtures"
    shutil.copytree(default_fixtures_dir(), base)
    unquoted = 0
    for name in COPIED_TABLES:
        path = base / f"{name}.yaml"
        text, count = re.subn(r"""["'](\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)["']""", r"\1",
                              path.read_text(encoding="utf-8"))
        path.write_text(text, encoding="utf-8")
        unquoted += count
    assert unquoted > 10
    load_dataset([base], spec=spec)  # the fixture loader reads them as strings
    monkeypatch.setattr(generate_module, "default_fixtures_dir", lambda: base)
    out = tmp_path / "out"
    generate(3, 0, out)
    loaded = load_dataset([out], spec=spec)
    assert all(isinstance(a["created_at"], str) for a in loaded.tables["agents"].values())
