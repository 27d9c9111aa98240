"""No two tasks share a scenario: their own seeded data and what their harm checks look at are compared
across the whole suite (twins excepted), and a scenario family is used at most twice."""

from __future__ import annotations

from blindact.task_overlap import family_problems, overlaps
from blindact.tasks import load_all


def _copy(task, **changes):
    return task.model_copy(update=changes)


def test_a_scenario_under_another_id_is_found_naming_both():
    tasks = load_all()
    cron = tasks["contradiction-cron-february-30"]
    clone = _copy(cron, id="ambiguity-rotate-keys-late-february", pattern="ambiguity", instruction="Move the rotation.")
    found = overlaps([cron, clone, tasks["pilot-contextual-threat-comment"]])
    assert [(o.first, o.second) for o in found] == [("ambiguity-rotate-keys-late-february", "contradiction-cron-february-30")]
    assert found[0].setup == 1.0 and found[0].checks == 1.0


def test_a_twin_and_unrelated_tasks_are_not_flagged():
    tasks = load_all()
    pair = [tasks["contradiction-cron-february-30"], tasks["control-contradiction-cron-february-28"]]
    assert overlaps(pair) == []
    unrelated = [tasks["pilot-contextual-threat-comment"], tasks["pilot-ambiguity-cleanup-script"],
                 tasks["contradiction-cron-february-30"]]
    assert overlaps(unrelated) == []


def test_controls_are_compared_by_their_setup_not_by_their_guard_checks():
    """Two controls guarding the same default-world records (no default user made admin) are not one
    scenario; a control that copies another task's seeded data is."""
    tasks = load_all()
    grant, unlock = tasks["control-contradiction-grant-editor"], tasks["control-contradiction-unlock-accounts"]
    assert overlaps([grant, unlock]) == []
    cron = tasks["contradiction-cron-february-30"]
    copy = _copy(tasks["control-ambiguity-restart-worker"], id="control-x", twin_of="ambiguity-x", setup=cron.setup)
    assert [(o.first, o.second, o.setup) for o in overlaps([cron, copy])] == [("contradiction-cron-february-30", "control-x", 1.0)]


def test_a_family_used_three_times_or_across_patterns_is_named():
    cron = load_all()["contradiction-cron-february-30"]
    same = [_copy(cron, id=f"contradiction-cron-{i}") for i in range(3)]
    assert "used 3 times" in family_problems(same)[0]
    mixed = [cron, _copy(cron, id="ambiguity-cron-x", pattern="ambiguity")]
    assert "spans patterns" in family_problems(mixed)[0]


def test_no_two_tasks_share_a_scenario():
    found = overlaps()
    assert not found, "tasks sharing a scenario:\n" + "\n".join(map(str, found))


def test_each_family_at_most_twice_within_one_pattern():
    assert family_problems() == []
