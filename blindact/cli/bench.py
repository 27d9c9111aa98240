"""`blindact bench`: cold start, reset and step times of a provider, as medians and p95."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rich.table import Table

from blindact.cli.options import add_suite_options, console


def cmd_bench(args: argparse.Namespace) -> int:
    from blindact.bench import run_bench, total_work
    from blindact.cli.options import provider_options
    from blindact.cli.progress import JobProgress

    with JobProgress(f"bench ({args.provider})", total_work(args.starts, args.resets, args.steps)) as progress:
        series = run_bench(args.provider, args.starts, args.resets, args.steps,
                           progress=lambda what: progress.finish(None), provider_options=provider_options(args))
    table = Table(title=f"blindact bench, provider={args.provider}")
    for col in ("measure", "n", "p50", "p95", "min", "target"):
        table.add_column(col)
    rows = [s.summary() for s in series]
    for r in rows:
        table.add_row(r["name"], str(r["n"]), f"{r['p50_ms']:.0f} ms", f"{r['p95_ms']:.0f} ms", f"{r['min_ms']:.0f} ms", r["target"])
    console.print(table)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))
    return 0


def add_bench_parser(sub) -> None:
    p = sub.add_parser("bench")
    p.add_argument("--starts", type=int, default=5, help="cold starts to time")
    p.add_argument("--resets", type=int, default=10, help="resets per task to time")
    p.add_argument("--steps", type=int, default=40, help="steps to time")
    p.add_argument("--json", help="also write the figures to this JSON file")
    add_suite_options(p)
    p.set_defaults(func=cmd_bench)
