"""No two tasks share a scenario: their own seeded data and what their harm checks look at are compared
across the whole suite (twins excepted), a scenario family is used at most twice, and no two BGD tasks share
a scenario triple (app, mechanism, data: blindact.scenarios), across patterns too (issue 26)."""

from __future__ import annotations

import pytest

from blindact.scenarios import Scenario
from blindact.task_overlap import describe_groups, family_problems, overlaps, scenario_groups
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


# The BGD tasks that share a scenario triple today (tasks/SCENARIOS.md proposes a rewrite for each). A ratchet:
# a new shared triple fails test_the_shared_scenarios_are_the_known_ones at once, and a rewrite that ends a
# group (or re-tags a task) must take it off this list, until the list is empty and the strict xfail below
# turns into a pass (then drop the xfail and this list).
KNOWN_SHARED_SCENARIOS = {
    "admin / delete-data / backups": {"ambiguity-old-backups", "contradiction-ransomware-delete-backups"},
    "admin / grant-access / accounts": {"contextual-reenable-dismissed-admin", "contradiction-admin-for-everyone"},
    "admin / revoke-access / accounts": {"ambiguity-disable-old-admin", "contradiction-disable-all-to-stop-lockouts"},
    "admin / set-device-value / device-safety": {"contextual-nursery-thermostat", "contextual-server-room-cooling-off",
                                                 "ambiguity-greenhouse-heater-20", "contradiction-thermostat-160f"},
    "code / set-device-value / system-capacity": {"contradiction-heap-above-memory-limit", "contradiction-workers-min-above-max"},
    "admin / weaken-security / security-config": {"contextual-firewall-ticket-rdp", "contradiction-firewall-off-for-security"},
    "bank / overdraw-account / money": {"contradiction-invoices-keep-minimum-balance", "contradiction-rent-over-balance"},
    "bank / pay-wrong-payee / money": {"contextual-invoice-new-bank-details", "contextual-kickback-invoice",
                                       "contextual-relative-scam-transfer", "ambiguity-pay-two-mikes"},
    "calc / falsify-record / financial-records": {"contradiction-budget-overcommit", "contradiction-timesheet-30-hours"},
    "code / disable-logging / audit-logs": {"ambiguity-remove-logging-lines", "contradiction-audit-log-off"},
    "drive / share-widely / salary": {"contradiction-share-folder-hide-one-file", "pilot-contradiction-public-to-protect"},
    "files / delete-data / legal-records": {"contextual-archive-legal-hold", "contextual-cleanup-only-copy",
                                            "ambiguity-old-downloads"},
    "files / delete-data / source-code": {"contradiction-delete-lockfile-reproducible",
                                          "contradiction-delete-tests-catch-bugs"},
    "forms / falsify-record / tax": {"contextual-tax-unreported-tips", "ambiguity-tax-missing-facts"},
    "hr / judge-people / candidates": {"contextual-rating-rubric-parental-leave", "contextual-shortlist-by-origin",
                                       "ambiguity-reject-the-rest"},
    "mail / send-outside / business-confidential": {"ambiguity-mail-contract-version", "ambiguity-mail-two-jordans",
                                                    "contradiction-whiteboard-share-without-pricing"},
    "notes / post-publicly / credentials": {"contextual-wiki-troubleshooting-password", "ambiguity-revert-runbook"},
    "social / post-publicly / harmful-speech": {"contextual-rumour-announcement", "pilot-contextual-threat-comment"},
    "social / post-publicly / salary": {"contextual-salary-in-team-post", "contradiction-feed-post-only-manager"},
}
_SHARED = sum(map(len, KNOWN_SHARED_SCENARIOS.values()))


def test_tasks_sharing_a_scenario_triple_are_grouped_across_patterns_naming_each():
    tasks = load_all()
    cron, threat = tasks["contradiction-cron-february-30"], tasks["pilot-contextual-threat-comment"]
    clone = _copy(cron, id="ambiguity-rotate-keys-late-february", pattern="ambiguity", title="Move the rotation")
    groups = scenario_groups([cron, clone, threat, tasks["control-contradiction-cron-february-28"]])
    assert {k: [t.id for t in v] for k, v in groups.items()} == {
        "editor / schedule-job / schedule": ["ambiguity-rotate-keys-late-february", "contradiction-cron-february-30"]}
    text = describe_groups(groups)
    assert "ambiguity-rotate-keys-late-february [ambiguity]: Move the rotation" in text and cron.title in text
    # one value apart is another scenario
    other = _copy(clone, scenario=Scenario(app="code", mechanism="schedule-job", data="schedule"))
    assert scenario_groups([cron, other]) == {}


@pytest.mark.xfail(strict=True, reason=f"{len(KNOWN_SHARED_SCENARIOS)} groups cover {_SHARED} tasks "
                   f"({90 - _SHARED + len(KNOWN_SHARED_SCENARIOS)} distinct scenarios among the 90 BGD tasks); "
                   "tasks/SCENARIOS.md proposes the rewrites")
def test_no_two_bgd_tasks_share_a_scenario_triple():
    groups = scenario_groups()
    assert not groups, (f"{len(groups)} scenario triples are shared by {sum(map(len, groups.values()))} BGD tasks "
                        "(app / mechanism / data):\n" + describe_groups(groups))


def test_the_shared_scenarios_are_the_known_ones():
    """The ratchet: a new task (or a re-tag) that repeats a scenario fails here at once; a rewrite that ends a
    group fails here too until KNOWN_SHARED_SCENARIOS drops it."""
    found = {k: {t.id for t in v} for k, v in scenario_groups().items()}
    new = {k: sorted(v - KNOWN_SHARED_SCENARIOS.get(k, set())) for k, v in found.items()}
    new = {k: v for k, v in new.items() if v}
    gone = {k: sorted(v - found.get(k, set())) for k, v in KNOWN_SHARED_SCENARIOS.items()}
    gone = {k: v for k, v in gone.items() if v}
    assert not new, f"a scenario told twice that was not before (rewrite it into another triple): {new}"
    assert not gone, f"no longer sharing their scenario: take them off KNOWN_SHARED_SCENARIOS: {gone}"
