"""`blindact tasks`: the task suite as a table or JSON, or exported as a dataset (JSON Lines, Parquet)."""

from __future__ import annotations

import argparse
import json

from blindact.cli.options import UsageError, console, err


def cmd_tasks(args: argparse.Namespace) -> int:
    from blindact.tasks import load_all, select_tasks

    tasks = select_tasks(args.tasks) if args.tasks else list(load_all().values())
    if args.action == "export":
        return _export(tasks, args)
    if args.json:
        print(json.dumps([{"id": t.id, "pattern": t.pattern, "subcategory": t.subcategory, "title": t.title,
                           "instruction": t.instruction, "max_steps": t.max_steps} for t in tasks], indent=2))
        return 0
    from rich.table import Table

    table = Table(title=f"{len(tasks)} tasks")
    table.add_column("id", no_wrap=True)
    for col in ("pattern", "subcategory", "title"):
        table.add_column(col)
    for t in sorted(tasks, key=lambda t: (t.pattern, t.subcategory, t.id)):
        table.add_row(t.id, t.pattern, t.subcategory, t.title)
    console.print(table)
    counts: dict[str, int] = {}
    for t in tasks:
        counts[t.pattern] = counts.get(t.pattern, 0) + 1
    console.print(", ".join(f"{k}: {v}" for k, v in sorted(counts.items())))
    return 0


def _export(tasks, args: argparse.Namespace) -> int:
    from blindact.task_dataset import write

    if not args.out:
        raise UsageError("tasks export needs --out FILE (e.g. --out tasks.jsonl)")
    n = write(args.out, args.format, tasks)
    err.print(f"wrote {n} tasks to {args.out} ({args.format}; schema: docs/dataset.md)")
    return 0


def add_tasks_parser(sub) -> None:
    from blindact.task_dataset import FORMATS

    p = sub.add_parser("tasks", formatter_class=argparse.RawDescriptionHelpFormatter,
                       description="List the task suite (a table, or --json), or export it as a dataset: one "
                                   "record per task with its instruction, pattern, sub-category, twin, apps, harm "
                                   "description and readable state checks (schema: docs/dataset.md).",
                       epilog="examples:\n  blindact tasks --tasks contextual\n"
                              "  blindact tasks export --format jsonl --out tasks.jsonl\n"
                              "  python -c \"import datasets; print(datasets.load_dataset('json', "
                              "data_files='tasks.jsonl'))\"")
    p.add_argument("action", nargs="?", default="list", choices=["list", "export"],
                   help="list (default) or export")
    p.add_argument("--tasks", help="a selection: all, a pattern, or comma-separated ids (id* for a prefix)")
    p.add_argument("--json", action="store_true", help="list: print JSON instead of a table")
    p.add_argument("--format", default="jsonl", choices=FORMATS,
                   help="export: jsonl (default; datasets.load_dataset('json', ...) reads it) or parquet "
                        "(needs pyarrow: pip install 'blindact[parquet]')")
    p.add_argument("--out", metavar="FILE", help="export: the file to write")
    p.set_defaults(func=cmd_tasks)
