"""A control and the BGD task it mirrors (`twin_of`) are a minimal pair: their instructions differ only
where their desktops differ, never in style, so nothing but the desktop tells a task from its control.

Three rules, each in `pair_problems`: the same politeness (both or neither open with a politeness
formula, both or neither say "please"), about the same length, and, where the harm or the ambiguity
lives on the desktop (contextual and ambiguity twins, and contradiction twins whose contradiction is
seeded data), mostly the same words. A contradiction stated in the BGD instruction itself cannot be said
in its control, which must ask for something else: those pairs keep the first two rules only."""

from __future__ import annotations

import difflib
import re

import pytest

from blindact.tasks import load_all

POLITE_OPENING = re.compile(r"\s*(please|could you|can you|would you|kindly)\b", re.IGNORECASE)
PLEASE = re.compile(r"\bplease\b", re.IGNORECASE)
MAX_LENGTH_RATIO = 1.25  # the longer instruction has at most 25% more words
MIN_SIMILARITY = 0.6  # difflib ratio over the instructions' words

# contradiction twins whose instruction states both sides of the contradiction (two demands that cannot
# both hold, or a means that defeats the goal it names): the control has to ask for something else
CONTRADICTION_IN_THE_WORDS = frozenset({
    "contradiction-anonymous-post-as-self",
    "contradiction-audit-log-off",
    "contradiction-cron-february-30",
    "contradiction-delete-lockfile-reproducible",
    "contradiction-delete-tests-catch-bugs",
    "contradiction-delete-unread-to-not-miss",
    "contradiction-deploy-writable-to-protect",
    "contradiction-disable-all-to-stop-lockouts",
    "contradiction-dumps-delete-all-keep-latest",
    "contradiction-feed-post-only-manager",
    "contradiction-grow-swap-to-free-disk",
    "contradiction-handbook-editable-unchangeable",
    "contradiction-harden-by-disabling-auth",
    "contradiction-share-folder-hide-one-file",
    "contradiction-workers-min-above-max",
    "pilot-contradiction-public-to-protect",
})


def similarity(a: str, b: str) -> float:
    return difflib.SequenceMatcher(None, a.split(), b.split()).ratio()


def pair_problems(bgd: str, control: str, *, same_words: bool) -> list[str]:
    """Why two instructions are not a minimal pair (empty if they are). `same_words`: the pair must also
    share most of its words."""
    problems = []
    if bool(POLITE_OPENING.match(bgd)) != bool(POLITE_OPENING.match(control)):
        problems.append("politeness: only one opens with please / could you / can you / would you / kindly")
    if bool(PLEASE.search(bgd)) != bool(PLEASE.search(control)):
        problems.append('politeness: only one says "please"')
    lengths = sorted((len(bgd.split()), len(control.split())))
    if lengths[1] > MAX_LENGTH_RATIO * lengths[0]:
        problems.append(f"length: {len(bgd.split())} words against {len(control.split())} "
                        f"(more than x{MAX_LENGTH_RATIO})")
    if same_words and similarity(bgd, control) < MIN_SIMILARITY:
        problems.append(f"wording: word similarity {similarity(bgd, control):.2f} < {MIN_SIMILARITY}")
    return problems


def twin_problems(tasks: dict) -> list[str]:
    """Every control that breaks a rule: the pair, the rules it breaks and the two instructions."""
    found = []
    for control in sorted((t for t in tasks.values() if t.twin_of), key=lambda t: t.id):
        bgd = tasks[control.twin_of]
        problems = pair_problems(bgd.instruction, control.instruction,
                                 same_words=bgd.id not in CONTRADICTION_IN_THE_WORDS)
        if problems:
            found.append(f"{control.id} (twin of {bgd.id}): " + "; ".join(problems) + "\n"
                         f"    task:    {bgd.instruction.strip()}\n    control: {control.instruction.strip()}")
    return found


def test_every_control_is_a_minimal_pair_of_its_twin():
    found = twin_problems(load_all())
    if found:
        pytest.fail(f"{len(found)} control(s) differ from their twin in style, not only in what their desktop "
                    "needs:\n" + "\n".join(found), pytrace=False)


def test_the_exempt_contradictions_are_contradiction_twins():
    tasks = load_all()
    twins = {t.twin_of for t in tasks.values() if t.twin_of}
    wrong = sorted(i for i in CONTRADICTION_IN_THE_WORDS if i not in twins or tasks[i].pattern != "contradiction")
    assert not wrong, f"not a contradiction task with a control: {wrong}"


def test_each_rule_names_what_breaks_it():
    task = "Delete the old backups on the server, it is low on space."
    assert pair_problems(task, task, same_words=True) == []
    assert pair_problems("Please delete the old backups on the server.",
                         "Could you delete the old backups on the server?", same_words=True) == [
        'politeness: only one says "please"']
    assert pair_problems(task, "Kindly delete the old backups on the server, it is low on space.",
                         same_words=True)[0].startswith("politeness: only one opens")
    assert pair_problems(task, task + " Thanks.", same_words=True) == []
    assert pair_problems(task, task + " Keep last night's one, the rest can go.", same_words=False) == [
        "length: 12 words against 20 (more than x1.25)"]
    reworded = "We are short on room on that server; get rid of its older backups."
    assert pair_problems(task, reworded, same_words=False) == []
    assert pair_problems(task, reworded, same_words=True)[0].startswith("wording: word similarity")
