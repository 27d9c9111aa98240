"""Importing labels from JSON Lines (the format `labels.labels_jsonl` exports, in judges/LABELLING.md,
"Labels as JSON Lines"), so labels made elsewhere (another team's tool, a crowd) can be compared with
`blindact agreement` like the labelling page's own.

An import is all or nothing: every row is checked first (JSON, known fields, types, the rubric's logic,
a trajectory that exists in the given run folders, task and pattern matching it, no row twice), and one
bad row stores nothing, with each problem named by line and field.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from blindact.judging.jsonl import json_lines
from blindact.judging.label_app import Item, load_items
from blindact.judging.labels import ROW_FIELDS, Label, LabelStore, opaque_id


@dataclass
class Imported:
    labels: list[Label] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    unchanged: int = 0  # rows identical to a label already stored (nothing to do)


def _problem(where: str, what: str, why: str) -> str:
    return f"{where}: {what}: {why}"


def _row_label(row: dict, where: str, items: dict[str, Item], by_id: dict[str, Item], now: float) -> tuple[Label | None, list[str]]:
    problems = [_problem(where, k, "unknown field (allowed: " + ", ".join(ROW_FIELDS) + ")")
                for k in row if k not in ROW_FIELDS]
    thash, tid = row.get("trajectory_hash"), row.get("id")
    item = None
    if thash is None and tid is None:
        problems.append(_problem(where, "trajectory_hash", "missing (give trajectory_hash or id)"))
    elif thash is not None and not isinstance(thash, str):
        problems.append(_problem(where, "trajectory_hash", f"must be a string, got {json.dumps(thash)}"))
    elif tid is not None and not isinstance(tid, str):
        problems.append(_problem(where, "id", f"must be a string, got {json.dumps(tid)}"))
    else:
        item = items.get(thash) if thash is not None else by_id.get(tid)
        if item is None:
            what, value = ("trajectory_hash", thash) if thash is not None else ("id", tid)
            problems.append(_problem(where, what, f"{value} is no trajectory of the given run folders"))
        elif thash is not None and tid is not None and opaque_id(thash) != tid:
            problems.append(_problem(where, "id", f"{tid} is not the id of trajectory_hash {thash[:12]}..."))
    if item is not None:
        # the episode's name may differ between copies of a trajectory; its task and pattern may not
        for key, value in (("task_id", item.task["id"]), ("pattern", item.task["pattern"])):
            if key in row and row[key] != value:
                problems.append(_problem(where, key, f"{json.dumps(row[key])}, but the trajectory is {json.dumps(value)}"))
    if problems:
        return None, problems
    data = {k: v for k, v in row.items() if k != "id"}
    data.update({"trajectory_hash": item.hash, "task_id": item.task["id"], "pattern": item.task["pattern"]})
    data.setdefault("episode", item.dir.name)
    data.setdefault("created", now)
    try:
        return Label.model_validate(data, strict=True), []
    except ValidationError as exc:
        return None, [_problem(where, ".".join(map(str, e["loc"])) or "label", e["msg"]) for e in exc.errors()]


def read_jsonl(path: Path, sources: list[Path], labels_dir: Path, *, replace: bool = False) -> Imported:
    """Check every row of a labels file against the trajectories of `sources` (run or episode folders)
    and the labels already in `labels_dir`; nothing is stored here."""
    path = Path(path)
    items = {x.hash: x for x in load_items(sources)[0]}
    by_id = {x.id: x for x in items.values()}
    stored = {(x.trajectory_hash, x.labeller): x for x in LabelStore(labels_dir).all()}
    out, seen, now = Imported(), {}, time.time()
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        out.problems.append(f"{path}: cannot be read ({exc})")
        return out
    for n, row, bad in json_lines(text):
        where = f"{path}, line {n}"
        if bad:
            out.problems.append(_problem(where, "row", bad))
            continue
        if not isinstance(row, dict):
            out.problems.append(_problem(where, "row", "must be a JSON object"))
            continue
        label, problems = _row_label(row, where, items, by_id, now)
        if label is None:
            out.problems += problems
            continue
        key = (label.trajectory_hash, label.labeller)
        if key in seen:
            out.problems.append(_problem(where, "labeller", f"{label.labeller} labels this trajectory again "
                                                            f"(first on line {seen[key]})"))
            continue
        seen[key] = n
        old = stored.get(key)
        if old is not None and _same(old, label):
            out.unchanged += 1
            continue
        if old is not None and not replace:
            out.problems.append(_problem(where, "labeller", f"{label.labeller} already has a different label on "
                                                            "this trajectory in the labels folder (--replace to overwrite)"))
            continue
        out.labels.append(label)
    return out


def _same(a: Label, b: Label) -> bool:
    keep = ("kind", "bgd_intention", "bgd_completion", "over_refusal", "first_bgd_step", "note")
    return all(getattr(a, k) == getattr(b, k) for k in keep)


def import_jsonl(path: Path, sources: list[Path], labels_dir: Path, *, replace: bool = False) -> Imported:
    """read_jsonl, then store the labels if no row had a problem."""
    result = read_jsonl(path, sources, labels_dir, replace=replace)
    if not result.problems:
        store = LabelStore(labels_dir)
        for label in result.labels:
            store.save(label)
    return result
