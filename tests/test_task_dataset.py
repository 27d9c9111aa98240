"""`blindact tasks export`: every task in the documented schema, read back by the real `datasets`
library (JSON Lines, and Parquet through pyarrow) exactly as it was written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from blindact.cli import main
from blindact.checks.kinds import parse_check
from blindact.task_dataset import FIELDS, schema_table
from blindact.tasks import get_task, load_all

DOC = Path(__file__).resolve().parents[1] / "docs" / "dataset.md"


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("export") / "tasks.jsonl"
    assert main(["tasks", "export", "--format", "jsonl", "--out", str(out)]) == 0
    return out


def _datasets(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # the json and parquet builders ship with the library
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    return pytest.importorskip("datasets")


def test_datasets_reads_the_jsonl_export(exported, tmp_path, monkeypatch):
    datasets = _datasets(monkeypatch)
    suite = datasets.load_dataset("json", data_files=str(exported), split="train", cache_dir=str(tmp_path / "cache"))
    tasks = load_all()
    assert suite.num_rows == len(tasks) == 180
    assert suite.column_names == [name for name, _, _ in FIELDS]
    rows = {r["id"]: r for r in suite}
    assert set(rows) == set(tasks)

    # one control and its BGD twin, field by field against the task files
    control = next(t for t in tasks.values() if t.is_control and t.family and t.checks.benign)
    bgd = get_task(control.twin_of)
    row = rows[control.id]
    assert (row["pattern"], row["twin"], rows[bgd.id]["twin"]) == ("control", bgd.id, control.id)
    assert row["instruction"] == control.instruction and row["subcategory"] == control.subcategory
    assert row["apps"] == control.apps and row["max_steps"] == control.max_steps
    assert row["judge_explanation"] == control.judge_explanation.strip()
    assert (row["domain"], row["family"], row["version"]) == (control.domain, control.family, control.version)
    assert [c["description"] for c in row["benign_checks"]] == [parse_check(c).describe() for c in control.checks.benign]
    assert [c["kind"] for c in rows[bgd.id]["harm_checks"]] == [c["check"] for c in bgd.checks.harm]
    assert row["subcategory_description"]  # every sub-category is described

    # the nullable fields stay null where the task has nothing, and typed where it has something
    no_family = next(t for t in tasks.values() if t.family is None)
    assert rows[no_family.id]["family"] is None
    no_benign = next(t for t in tasks.values() if t.no_benign_reason)
    assert rows[no_benign.id]["no_benign_reason"] == no_benign.no_benign_reason
    assert rows[no_benign.id]["benign_checks"] == []
    assert dict(suite.features["harm_checks"].feature) == {"kind": datasets.Value("string"),
                                                           "label": datasets.Value("string"),
                                                           "description": datasets.Value("string")}


def test_the_jsonl_is_one_object_per_line_in_field_order(exported):
    lines = exported.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 180
    first = json.loads(lines[0])
    assert list(first) == [name for name, _, _ in FIELDS]


def test_parquet_export_reads_back_the_same(exported, tmp_path, monkeypatch):
    datasets = _datasets(monkeypatch)
    pq = pytest.importorskip("pyarrow.parquet")
    out = tmp_path / "contextual.parquet"
    assert main(["tasks", "export", "--format", "parquet", "--tasks", "contextual", "--out", str(out)]) == 0
    table = pq.read_table(out)
    assert table.num_rows == 30 and table.schema.names == [name for name, _, _ in FIELDS]
    assert not table.schema.field("id").nullable and table.schema.field("family").nullable
    suite = datasets.load_dataset("parquet", data_files=str(out), split="train", cache_dir=str(tmp_path / "cache"))
    from_json = {json.loads(line)["id"]: json.loads(line) for line in exported.read_text().splitlines()}
    for row in suite:
        assert row == from_json[row["id"]]


def test_export_needs_an_out_file_and_a_known_format(tmp_path, capsys):
    assert main(["tasks", "export"]) == 2
    assert "tasks export needs --out FILE" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["tasks", "export", "--format", "csv", "--out", str(tmp_path / "x")])
    assert exc.value.code == 2


def test_the_documented_schema_is_the_exported_one():
    assert schema_table() in DOC.read_text(), "docs/dataset.md: paste `python -m blindact.task_dataset` into it"
