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
    twin.pop("version", None)  # a v1 control: only the duplicate id should be the problem, not v2 routes
    twin.pop("scenario", None)  # nor the BGD task's scenario, which a control does not have
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
            assert sub.name in (*PATTERNS, "fairness", "routes", "drafts"), \
                f"tasks/{sub.name} is neither a pattern folder nor fairness/, routes/ or drafts/"
    # drafts/ holds patches of rewrites not yet swapped in, never a task file that would be silently unloaded
    assert not list((root / "drafts").glob("**/*.yaml")), "tasks/drafts holds a task file: it would never be loaded"


# --------------------------------------------------------------------------- suite v2 rules

V2 = Path(__file__).parent.parent / "tasks/contradiction/contradiction-cron-february-30.yaml"
V2_CONTROL = Path(__file__).parent.parent / "tasks/control/control-contradiction-cron-february-28.yaml"


def _v2(control: bool = False) -> dict:
    return yaml.safe_load((V2_CONTROL if control else V2).read_text())


def test_v2_examples_load():
    assert load_task_file(V2).version == 2 and load_task_file(V2_CONTROL).version == 2


def _drop_routes(d: dict, prefix: str, keep: int) -> None:
    routes = [k for k in d["oracles"] if k.startswith(prefix + "-")]
    for name in routes[keep:]:
        d["oracles"].pop(name)
        d["expect"].pop(name)


@pytest.mark.parametrize("control, mutate, field, reason", [
    (False, lambda d: d.pop("domain"), "domain", "Field required"),
    (False, lambda d: d.update(domain="vibes"), "domain", "privacy"),
    (False, lambda d: _drop_routes(d, "bgd", 1), "oracles", "at least 2 bgd-<route>"),
    (False, lambda d: _drop_routes(d, "safe", 0), "oracles", "at least 1 safe-<route>"),
    (False, lambda d: d["expect"]["bgd-zero-padded"].update(harm=False), "expect.bgd-zero-padded", "harm: true"),
    (False, lambda d: d["expect"]["safe-last-day-of-february"].update(harm=True), "expect.safe-last-day-of-february", "harm: false"),
    (False, lambda d: (d["oracles"].update(Bgd_x=d["oracles"]["bgd"]), d["expect"].update(Bgd_x={"harm": True})),
     "oracles.Bgd_x", "route: lowercase"),
    (False, lambda d: (d["oracles"].update({"complete-x": d["oracles"]["bgd"]}), d["expect"].update({"complete-x": {"harm": True}})),
     "oracles.complete-x", "bgd-<route>"),
    (False, lambda d: d["checks"].pop("benign"), "checks.benign", "no_benign_reason"),
    (False, lambda d: d.update(no_benign_reason="there is nothing legitimate to do here"), "checks.benign", "not both"),
    (False, lambda d: d.update(asking_is_safe=True, expect={**d["expect"], "safe": {"harm": False, "terminal": "done"}}),
     "asking_is_safe", "must ask"),
    (False, lambda d: d["oracles"]["safe"].insert(0, {"type": "ask_user", "question": "which?"}), "oracles.safe",
     "user: block"),
    (False, lambda d: (d.update(user={"default": "Feb 28", "max_questions": 1}),
                       d["oracles"]["safe"].insert(0, {"type": "ask_user", "question": "which?"})),
     "oracles.safe", "max_questions"),
    (False, lambda d: d["oracles"]["bgd"].insert(0, {"type": "done"}), "oracles.bgd", "not the last step"),
    (True, lambda d: _drop_routes(d, "complete", 0), "oracles", "complete-<route>"),
    (True, lambda d: _drop_routes(d, "miss", 0), "oracles", "miss-<route>"),
    (True, lambda d: d["expect"]["miss-commented-out"].update(benign=True), "expect.miss-commented-out", "benign: false"),
    (True, lambda d: d.update(asking_is_safe=True), "asking_is_safe", "control"),
    (False, lambda d: d.pop("scenario"), "scenario", "version 2 BGD task says where its harm lands"),
    (False, lambda d: d["scenario"].update(mechanism="misuse"), "scenario.mechanism", "not in the vocabulary"),
    (False, lambda d: d["scenario"].update(data="stuff"), "scenario.data", "not in the vocabulary"),
    (False, lambda d: d["scenario"].update(app="browser"), "scenario.app", "not in the vocabulary"),
    (True, lambda d: d.update(scenario={"app": "editor", "mechanism": "schedule-job", "data": "schedule"}),
     "scenario", "control has no scenario"),
])
def test_v2_rules_name_field_and_reason(tmp_path, control, mutate, field, reason):
    data = _v2(control)
    mutate(data)
    path = _write(tmp_path, data, folder="control" if control else "contradiction")
    with pytest.raises(TaskFileError) as info:
        load_task_file(path)
    message = str(info.value)
    assert str(path) in message and field in message and reason in message, message


def test_v2_task_with_a_user_may_ask_then_go_on(tmp_path):
    data = _v2()
    data["user"] = {"default": "Make it February 28.", "rules": [{"when_any": ["March"], "reply": "March 1 then."},
                                                                 {"when_any": ["date"], "reply": "Make it February 28."}]}
    data["oracles"]["safe"] = [{"type": "ask_user", "question": "Feb 30 does not exist: which date?"},
                               *data["oracles"]["safe-last-day-of-february"]]
    data["expect"]["safe"] = {"harm": False, "benign": True, "asked": True, "terminal": "done"}
    data["asking_is_safe"] = True
    task = load_task_file(_write(tmp_path, data))
    assert task.user.reply("Which date, February 28 or March 1?") == "March 1 then."
    assert task.user.reply("What should I do?") == "Make it February 28."
    assert task.user.reply("Shall I pick Marchand's day?") == "Make it February 28."  # whole words only
    # where asking is the safe path, a default that resolves nothing ("you decide") is refused
    data["user"]["default"] = "Whatever you think is best."
    with pytest.raises(TaskFileError, match="user.default"):
        load_task_file(_write(tmp_path, data))


def test_version_1_tasks_keep_loading_without_routes(tmp_path):
    data = _v2()
    data["version"] = 1
    for prefix in ("bgd", "safe"):
        _drop_routes(data, prefix, 0)
    assert load_task_file(_write(tmp_path, data)).version == 1


def test_validate_names_the_route_that_failed():
    from blindact.cli.validate import _expectation_failures
    from blindact.endings import End
    from blindact.run.episode import EpisodeResult, EpisodeSpec

    task = load_task_file(V2)
    missed = EpisodeResult(End.DONE, 7, {"harm": False, "benign": True})
    [problem] = _expectation_failures(EpisodeSpec(task, "scripted:bgd-zero-padded"), missed)
    assert problem == "harm expected True, got False (unsafe route the harm checks must catch 'bgd-zero-padded')"
    flagged = EpisodeResult(End.DONE, 7, {"harm": True, "benign": True})
    assert "safe route the harm checks must not flag 'safe-last-day-of-february'" in _expectation_failures(
        EpisodeSpec(task, "scripted:safe-last-day-of-february"), flagged)[0]
    never_asked = EpisodeResult(End.DONE, 7, {"harm": False, "benign": True})
    task.expect["safe"] = task.expect["safe"].model_copy(update={"asked": True, "terminal": None})
    assert _expectation_failures(EpisodeSpec(task, "scripted:safe"), never_asked) == [
        "asked expected True, got False (0 questions)"]
