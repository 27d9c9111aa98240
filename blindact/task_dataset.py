"""The task suite as a dataset: one record per task in a fixed schema, written as JSON Lines or
Parquet. `datasets.load_dataset("json", data_files="tasks.jsonl")` reads the JSON Lines file as it is.
The schema's table in docs/dataset.md is printed by `python -m blindact.task_dataset` (a test compares).

    blindact tasks export --format jsonl --out tasks.jsonl
"""

from __future__ import annotations

import json
from pathlib import Path

from blindact.checks.kinds import parse_check
from blindact.tasks import Task, load_all, subcategories

FORMATS = ("jsonl", "parquet")

# (field, type, what it holds); types: string, int, bool, list<string>, list<check>, where a check is
# {kind: string, label: string, description: string}; "?" marks a field that may be null
FIELDS: tuple[tuple[str, str, str], ...] = (
    ("id", "string", "the task id (the name of its file under tasks/)"),
    ("title", "string", "a short title"),
    ("instruction", "string", "what the user asks the agent, word for word"),
    ("pattern", "string", "contextual, ambiguity or contradiction (a BGD task), or control (its benign twin)"),
    ("subcategory", "string", "the sub-category within the pattern"),
    ("subcategory_description", "string", "what the sub-category is (from the pattern's _subcategories.yaml)"),
    ("twin", "string", "the paired task: for a BGD task its control twin, for a control the BGD task it mirrors"),
    ("apps", "list<string>", "the apps the task opens or seeds (web apps by name, and desktop apps)"),
    ("judge_explanation", "string", "the harm description: what counts as blind goal-directedness here, "
                                    "as the judges read it"),
    ("harm_checks", "list<check>", "state checks of the harm: it was carried out if any passes"),
    ("benign_checks", "list<check>", "state checks of the legitimate goal: reached if all pass (empty: none)"),
    ("no_benign_reason", "string?", "why a BGD task has no legitimate part (null when it has one)"),
    ("domain", "string", "the harm at stake (privacy, security, finance, ...; a control names its twin's)"),
    ("family", "string?", "the scenario family (tasks/PLAN.md), null for tasks written before families"),
    ("max_steps", "int", "the step limit of an episode"),
    ("version", "int", "the task format version (2: the suite v2 rules hold)"),
    ("simulated_user", "bool", "a simulated user answers the agent's questions (ask_user goes on)"),
    ("asking_is_safe", "bool", "asking the user is the only safe ending"),
)


def _checks(raw: list[dict]) -> list[dict]:
    out = []
    for data in raw:
        check = parse_check(data)
        out.append({"kind": check.check, "label": check.label(), "description": check.describe()})
    return out


def records(tasks: list[Task] | None = None) -> list[dict]:
    """One record per task (every shipped task by default), its fields in the order of FIELDS."""
    tasks = list(load_all().values()) if tasks is None else tasks
    every = load_all()
    mirrors = {t.twin_of: t.id for t in every.values() if t.twin_of}
    described = subcategories()
    out = []
    for t in sorted(tasks, key=lambda t: t.id):
        out.append({
            "id": t.id, "title": t.title, "instruction": t.instruction, "pattern": t.pattern,
            "subcategory": t.subcategory,
            "subcategory_description": described.get(t.pattern, {}).get(t.subcategory, ""),
            "twin": t.twin_of if t.is_control else mirrors.get(t.id, ""), "apps": t.apps,
            "judge_explanation": t.judge_explanation.strip(),
            "harm_checks": _checks(t.checks.harm), "benign_checks": _checks(t.checks.benign),
            "no_benign_reason": t.no_benign_reason, "domain": t.domain, "family": t.family,
            "max_steps": t.max_steps, "version": t.version, "simulated_user": t.user is not None,
            "asking_is_safe": t.asking_is_safe,
        })
    return out


def _arrow_schema():
    import pyarrow as pa

    check = pa.struct([("kind", pa.string()), ("label", pa.string()), ("description", pa.string())])
    types = {"string": pa.string(), "string?": pa.string(), "int": pa.int64(), "bool": pa.bool_(),
             "list<string>": pa.list_(pa.string()), "list<check>": pa.list_(check)}
    return pa.schema([pa.field(name, types[kind], nullable=kind.endswith("?")) for name, kind, _ in FIELDS])


def write(path: str | Path, fmt: str, tasks: list[Task] | None = None) -> int:
    """Write the records to `path` as JSON Lines or Parquet; returns how many were written."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}")
    rows = records(tasks)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "jsonl":
        with open(path, "w", encoding="utf-8") as fh:
            for row in rows:
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
        return len(rows)
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise ValueError("--format parquet needs pyarrow: pip install 'blindact[parquet]'") from None
    pq.write_table(pa.Table.from_pylist(rows, schema=_arrow_schema()), path)
    return len(rows)


def schema_table() -> str:
    """FIELDS as the Markdown table of docs/dataset.md."""
    rows = [f"| `{name}` | {kind.replace('<', '&lt;').replace('>', '&gt;')} | {what} |" for name, kind, what in FIELDS]
    return "\n".join(["| field | type | what it holds |", "|---|---|---|", *rows])


if __name__ == "__main__":
    print(schema_table())
