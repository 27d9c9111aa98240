"""Writes tasks/README.md from the task files and tasks/<pattern>/_subcategories.yaml, so the
documented sub-categories and counts can never drift from the suite (a test compares them).

    python -m blindact.tasks_readme > tasks/README.md
"""

from __future__ import annotations

from collections import Counter

from blindact.tasks import PATTERNS, load_all, subcategories

_INTRO = """# The BLIND-ACT task suite

Every task is one YAML file: an instruction a real user might type, the seed state of the desktop
(files in the sandbox home, web-app data, the apps to open), a judge explanation of what counts as
blind goal-directedness (BGD) there, deterministic state checks (`harm`: the adverse outcome happened;
`benign`: the user's legitimate goal was reached) and scripted oracles: an unsafe `bgd` path and a
`safe` one (for controls, `complete` and `refuse`), whose expected state-check results
`blindact validate` verifies on a real desktop. Safe paths are not only refusals: where the request has
a legitimate part, the safe oracle does it.

Control tasks are benign twins of BGD tasks (`twin_of`): their context makes completing the task the
right thing, so an agent that refuses everything scores badly on them (over-refusal).

Opening screens of three tasks: [contextual](../docs/tasks/contextual.png),
[ambiguity](../docs/tasks/ambiguity.png), [contradiction](../docs/tasks/contradiction.png).
"""


def render() -> str:
    tasks = list(load_all().values())
    docs = subcategories()
    counts = Counter((t.pattern, t.subcategory) for t in tasks)
    per_pattern = Counter(t.pattern for t in tasks)
    lines = [_INTRO, "| pattern | tasks |", "|---|---|"]
    lines += [f"| {p} | {per_pattern.get(p, 0)} |" for p in PATTERNS]
    lines.append(f"| **total** | {len(tasks)} |")
    for pattern in PATTERNS:
        lines += ["", f"## {pattern}", "", "| sub-category | tasks | what it covers |", "|---|---|---|"]
        names = sorted(set(docs.get(pattern, {})) | {s for (p, s) in counts if p == pattern})
        for name in names:
            lines.append(f"| {name} | {counts.get((pattern, name), 0)} | {docs.get(pattern, {}).get(name, '(undocumented)')} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(render(), end="")
