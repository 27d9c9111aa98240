"""Task files: the pilots load, and every kind of broken file is rejected naming file, field, reason."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from blindact.tasks import PATTERNS, TaskFileError, load_all, load_task_file, select_tasks

PILOTS = ["pilot-contextual-threat-comment", "pilot-ambiguity-cleanup-script", "pilot-contradiction-public-to-protect"]


def test_pilots_load_one_per_pattern():
    tasks = load_all()
    for pilot in PILOTS:
        assert pilot in tasks
    assert {tasks[p].pattern for p in PILOTS} == {"contextual", "ambiguity", "contradiction"}
    for pilot in PILOTS:
        task = tasks[pilot]
        assert set(task.oracles) >= {"bgd", "safe"}
        assert task.checks.harm, "every task has at least one harm check"
        assert task.expect["bgd"].harm is True and task.expect["safe"].harm is False


def test_select_by_pattern_id_and_prefix():
    ambiguity = select_tasks("ambiguity")
    assert "pilot-ambiguity-cleanup-script" in [t.id for t in ambiguity]
    assert {t.pattern for t in ambiguity} == {"ambiguity"}
    assert {t.id for t in select_tasks("pilot-*")} >= set(PILOTS)
    with pytest.raises(KeyError, match="no task 'nope'"):
        select_tasks("nope")


def _good() -> dict:
    path = next(Path(__file__).parent.parent.glob("tasks/contradiction/pilot-contradiction-public-to-protect.yaml"))
    return yaml.safe_load(path.read_text())


def _write(tmp_path: Path, data, folder: str = "contradiction", name: str | None = None) -> Path:
    d = tmp_path / folder
    d.mkdir(exist_ok=True)
    if name is None:
        name = f"{data.get('id', 't')}.yaml" if isinstance(data, dict) else "t.yaml"
    path = d / name
    path.write_text(data if isinstance(data, str) else yaml.safe_dump(data))
    return path


def test_good_copy_loads(tmp_path):
    assert load_task_file(_write(tmp_path, _good())).id == "pilot-contradiction-public-to-protect"


@pytest.mark.parametrize("mutate, field, reason", [
    (lambda d: d.pop("instruction"), "instruction", "Field required"),
    (lambda d: d.update(pattern="weird"), "pattern", "contextual"),
    (lambda d: d.update(max_steps=0), "max_steps", "greater than or equal to 1"),
    (lambda d: d.update(id="Has Spaces"), "id", "lowercase"),
    (lambda d: d["checks"].update(harm=[]), "checks.harm", "at least 1"),
    (lambda d: d["checks"]["harm"].append({"check": "file_teleported", "path": "x"}), "checks.harm", "file_teleported"),
    (lambda d: d["checks"]["harm"].append({"check": "file_exists", "path": "../../etc/passwd"}), "checks.harm", "without '..'"),
    (lambda d: d["checks"]["harm"].append({"check": "app", "app": "nosuchapp", "query": "x"}), "checks.harm", "nosuchapp"),
    (lambda d: d["checks"]["harm"].append({"check": "app", "app": "social", "query": "teleported"}), "checks.harm", "teleported"),
    (lambda d: d["setup"].append({"launch": {"app": "spreadsheet9000"}}), "setup", "spreadsheet9000"),
    (lambda d: d["setup"].append({"explode": True}), "setup", "unknown setup step"),
    (lambda d: d["oracles"].pop("safe"), "oracles", "missing ['safe']"),
    (lambda d: d["oracles"]["bgd"].append({"type": "teleport"}), "oracles.bgd", "teleport"),
    (lambda d: d["oracles"]["bgd"].append({"type": "type", "text": "x", "target": {"role": "entry"}}), "oracles.bgd", "pointer actions"),
    (lambda d: d.update(surprise="field"), "surprise", "Extra inputs"),
])
def test_broken_task_names_file_field_and_reason(tmp_path, mutate, field, reason):
    data = _good()
    mutate(data)
    path = _write(tmp_path, data)
    with pytest.raises(TaskFileError) as info:
        load_task_file(path)
    message = str(info.value)
    assert str(path) in message
    assert field in message
    assert reason in message


def test_not_yaml_and_not_a_mapping(tmp_path):
    with pytest.raises(TaskFileError, match="not valid YAML"):
        load_task_file(_write(tmp_path, "id: [unclosed"))
    with pytest.raises(TaskFileError, match="must hold a mapping"):
        load_task_file(_write(tmp_path, "- just\n- a list\n", name="l.yaml"))


def test_pattern_must_match_folder(tmp_path):
    with pytest.raises(TaskFileError, match="file is in ambiguity/"):
        load_task_file(_write(tmp_path, _good(), folder="ambiguity"))


def test_file_name_must_be_the_id(tmp_path):
    with pytest.raises(TaskFileError, match="name the file pilot-contradiction-public-to-protect.yaml"):
        load_task_file(_write(tmp_path, _good(), name="renamed.yaml"))


def test_duplicate_ids_name_both_files(tmp_path):
    # the same id in two pattern folders (a control twin given its BGD task's id by mistake)
    first = _write(tmp_path, _good())
    twin = _good()
    twin.update(pattern="control", twin_of="pilot-contradiction-public-to-protect",
                oracles={"complete": twin["oracles"]["safe"], "refuse": [{"type": "fail", "reason": "no"}]},
                expect={"complete": {"benign": True}, "refuse": {"benign": False}})
    second = _write(tmp_path, twin, folder="control")
    with pytest.raises(TaskFileError) as info:
        load_all.__wrapped__(tmp_path)
    assert str(second) in str(info.value) and str(first) in str(info.value)


def test_control_needs_twin_and_its_oracles(tmp_path):
    data = _good()
    data.update(pattern="control", id="control-x")
    with pytest.raises(TaskFileError, match=r"complete.*refuse"):
        load_task_file(_write(tmp_path, data, folder="control"))


def test_every_shipped_task_dir_is_a_pattern():
    root = Path(__file__).parent.parent / "tasks"
    for sub in root.iterdir():
        if sub.is_dir():
            assert sub.name in (*PATTERNS, "fairness"), f"tasks/{sub.name} is neither a pattern folder nor fairness/"
