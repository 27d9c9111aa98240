"""Do two tasks share a scenario? Compares what the desktop is seeded with (files, documents, app
records) and what the checks test, so a scenario reused under another id or pattern is found even
when its instruction was reworded. A control and the BGD task it mirrors share their setup on purpose
and are not compared. Harm checks are compared between BGD tasks only: a BGD task's harm checks are its
scenario's harm, while a control's are guards against over-eager damage to the shared default world
(no default user made admin, the default "confidential" folder not made public), which many unrelated
controls must watch; a control is compared by its own seeded data, and its scenario through its twin.

Beside the data, the rule of issue 26: no two BGD tasks share a scenario triple (the app where the harm
lands, its mechanism, the kind of data at stake; blindact.scenarios), across patterns too. Near-duplicates
that reword the request and reseed other props (two thermostats set to a harmful value, two payments to
the wrong payee) share the triple though not the text.

    python -m blindact.task_overlap          # every pair above the thresholds, worst first; shared triples
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from itertools import combinations

from blindact.apps.registry import parse_seed
from blindact.tasks import Task, load_all

# At either figure two tasks are one scenario. Calibrated on the v1 suite: the reused scenarios issue
# 15 lists (the payment batch, the server-room thermostat, the benefits and passport forms, the
# firewall) share half or more of what their harm checks look at, or a fifth of their own seeded
# text; unrelated tasks stay under 0.15 on setup and 0.4 on checks.
SETUP_THRESHOLD = 0.2
CHECK_THRESHOLD = 0.5
_SHINGLE = 4
_WORD = re.compile(r"[a-z0-9][a-z0-9@._'-]*")


def _strings(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() if k not in ("mode", "launch") for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return [str(value)]
    return []


def _shingles(texts: list[str]) -> set[tuple[str, ...]]:
    grams: set[tuple[str, ...]] = set()
    for text in texts:
        words = _WORD.findall(text.lower())
        if 0 < len(words) < _SHINGLE:
            grams.add(tuple(words))
        grams.update(tuple(words[i:i + _SHINGLE]) for i in range(len(words) - _SHINGLE + 1))
    return grams


@lru_cache(maxsize=None)
def _default_seed_shingles(app: str) -> frozenset[tuple[str, ...]]:
    return frozenset(_shingles(_strings(parse_seed(app, {}).model_dump(mode="json"))))


def setup_shingles(task: Task) -> frozenset[tuple[str, ...]]:
    """Word 4-grams of what the task itself seeds: file contents, documents, pictures' text, and app
    records beyond the app's default seed (the default world is shared by design), each string on
    its own so that neighbouring values make no n-grams of their own."""
    grams: set[tuple[str, ...]] = set()
    for step in task.setup:
        if "launch" in step or "run" in step:
            continue
        if "seed" in step:
            for app, data in step["seed"].items():
                seeded = _shingles(_strings(parse_seed(app, data).model_dump(mode="json")))
                grams |= seeded - _default_seed_shingles(app)
            continue
        grams |= _shingles(_strings(step))
    return frozenset(grams)


def check_signatures(task: Task) -> frozenset[str]:
    """What the harm checks look at: each path, app record and value they name ("payment-batch",
    "Server room thermostat", "jobs/crontab.txt"), without the check kinds and labels that many
    unrelated tasks share."""
    values: set[str] = set()

    def walk(key: str, value) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                walk(k, v)
        elif isinstance(value, list):
            for v in value:
                walk(key, v)
        elif isinstance(value, str) and key not in ("check", "app", "query", "name", "kind"):
            values.add(f"{key}={value.strip().lower()}")

    for check in task.checks.harm:
        walk("", check)
    return frozenset(values)


def jaccard(a: frozenset, b: frozenset) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


@dataclass(frozen=True)
class Overlap:
    first: str
    second: str
    setup: float
    checks: float

    def __str__(self) -> str:
        return f"{self.first} ~ {self.second}: setup {self.setup:.2f}, harm checks {self.checks:.2f}"


def _twins(a: Task, b: Task) -> bool:
    return a.twin_of == b.id or b.twin_of == a.id or (a.is_control and b.is_control and a.twin_of == b.twin_of)


def overlaps(tasks: list[Task] | None = None, setup_threshold: float = SETUP_THRESHOLD,
             check_threshold: float = CHECK_THRESHOLD) -> list[Overlap]:
    """Every pair of tasks (twins excepted) whose setups or harm checks overlap at the thresholds or more."""
    tasks = sorted(tasks if tasks is not None else load_all().values(), key=lambda t: t.id)
    shingles = {t.id: setup_shingles(t) for t in tasks}
    sigs = {t.id: check_signatures(t) for t in tasks}
    found = []
    for a, b in combinations(tasks, 2):
        if _twins(a, b):
            continue
        s = jaccard(shingles[a.id], shingles[b.id])
        c = jaccard(sigs[a.id], sigs[b.id]) if not (a.is_control or b.is_control) else 0.0
        if s >= setup_threshold or c >= check_threshold:
            found.append(Overlap(a.id, b.id, s, c))
    return sorted(found, key=lambda o: -(o.setup + o.checks))




def scenario_groups(tasks: list[Task] | None = None) -> dict[str, list[Task]]:
    """BGD tasks that share a scenario triple ("app / mechanism / data" -> the tasks, by pattern then id),
    groups of two or more only. Controls have no scenario of their own; a BGD task without one is not grouped."""
    tasks = list(tasks if tasks is not None else load_all().values())
    groups: dict[str, list[Task]] = {}
    for t in tasks:
        if not t.is_control and t.scenario is not None:
            groups.setdefault(str(t.scenario), []).append(t)
    order = {p: i for i, p in enumerate(("contextual", "ambiguity", "contradiction"))}
    return {triple: sorted(group, key=lambda t: (order.get(t.pattern, 9), t.id))
            for triple, group in sorted(groups.items()) if len(group) > 1}


def describe_groups(groups: dict[str, list[Task]]) -> str:
    """One line per group and one per task: its id, pattern and title."""
    lines = []
    for triple, group in groups.items():
        lines.append(f"{triple} ({len(group)} tasks):")
        lines += [f"    {t.id} [{t.pattern}]: {t.title}" for t in group]
    return "\n".join(lines)


def family_problems(tasks: list[Task] | None = None) -> list[str]:
    """A scenario family (`family:` of the BGD tasks) is used at most twice, within one pattern."""
    tasks = list(tasks if tasks is not None else load_all().values())
    members: dict[str, list[Task]] = {}
    for t in tasks:
        if t.family and not t.is_control:
            members.setdefault(t.family, []).append(t)
    problems = []
    for family, group in sorted(members.items()):
        ids = ", ".join(sorted(t.id for t in group))
        if len(group) > 2:
            problems.append(f"family {family!r} is used {len(group)} times (at most 2): {ids}")
        if len({t.pattern for t in group}) > 1:
            problems.append(f"family {family!r} spans patterns: {ids}")
    return problems


if __name__ == "__main__":
    for overlap in overlaps():
        print(overlap)
    for problem in family_problems():
        print(problem)
    shared = scenario_groups()
    if shared:
        print(f"{len(shared)} scenario triples shared by {sum(map(len, shared.values()))} BGD tasks:")
        print(describe_groups(shared))
