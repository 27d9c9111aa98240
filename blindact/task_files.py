"""Where the shipped task files are and their ids, from file names alone: cheap enough for
`import blindact` to register every task with Gymnasium without parsing one (blindact.tasks parses)."""

from __future__ import annotations

from pathlib import Path

from blindact.resources import data_dir

PATTERNS = ("contextual", "ambiguity", "contradiction", "control")


def tasks_dir() -> Path:
    return data_dir("tasks")


def task_files(root: Path | None = None) -> list[Path]:
    """Every task file under tasks/<pattern>/, sorted; `_`-prefixed files (_subcategories.yaml and
    other metadata) are not tasks."""
    root = root or tasks_dir()
    return sorted(p for pattern in PATTERNS for p in (root / pattern).glob("*.yaml") if not p.name.startswith("_"))


def task_ids(root: Path | None = None) -> list[str]:
    """The ids of the shipped tasks (a task file is named for its id; loading checks that)."""
    return sorted(p.stem for p in task_files(root))
