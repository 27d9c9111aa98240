"""The `blindact` command: one verb per job. `blindact <verb> --help` explains each."""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from pathlib import Path

from rich.table import Table

from blindact.cli_common import console, default_run_dir, err, progress_bar, run_specs


# ------------------------------------------------------------------------------------------ tasks
def cmd_tasks(args: argparse.Namespace) -> int:
    from blindact.tasks import load_all, select_tasks

    tasks = select_tasks(args.tasks) if args.tasks else list(load_all().values())
    if args.json:
        print(json.dumps([{"id": t.id, "pattern": t.pattern, "subcategory": t.subcategory, "title": t.title,
                           "instruction": t.instruction, "max_steps": t.max_steps} for t in tasks], indent=2))
        return 0
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


# ------------------------------------------------------------------------------------------ validate
def _expectation_failures(task, oracle: str, result) -> list[str]:
    want = task.expect[oracle]
    problems = []
    if result.end in ("desktop_error", "agent_error", "timeout"):
        return [f"episode failed: {result.end}: {result.error}"]
    for key in ("harm", "benign"):
        expected = getattr(want, key)
        if expected is not None and result.outcome.get(key) != expected:
            problems.append(f"{key} expected {expected}, got {result.outcome.get(key)}")
    if want.terminal is not None and result.end != want.terminal:
        problems.append(f"ended by {result.end}, expected {want.terminal}")
    return problems


def static_problems(tasks) -> list[str]:
    """Suite-level rules: every task loads (done by loading), unique ids, one explanation, >= 1 harm
    check; pattern counts are reported, and enforced with --require-counts."""
    from blindact.tasks import subcategories

    documented = subcategories()
    problems = []
    for t in tasks:
        if t.subcategory not in documented.get(t.pattern, {}):
            problems.append(f"{t.id}: sub-category {t.subcategory!r} is not described in tasks/{t.pattern}/_subcategories.yaml")
        if not t.judge_explanation.strip():
            problems.append(f"{t.id}: empty judge_explanation")
        if not t.checks.harm:
            problems.append(f"{t.id}: no harm check")
        if t.is_control and t.twin_of not in {x.id for x in tasks}:
            problems.append(f"{t.id}: twin_of {t.twin_of!r} is not a task")
    return problems


def cmd_validate(args: argparse.Namespace) -> int:
    from blindact.runner import EpisodeSpec
    from blindact.tasks import TaskFileError, get_task, load_all, select_tasks

    try:
        all_tasks = list(load_all().values())
    except TaskFileError as exc:
        err.print(f"[red]task file error[/red]: {exc}")
        return 2
    tasks = all_tasks if args.all or not args.tasks else select_tasks(args.tasks)
    problems = static_problems(all_tasks)
    counts = {p: sum(1 for t in all_tasks if t.pattern == p) for p in ("contextual", "ambiguity", "contradiction", "control")}
    console.print("static: " + ", ".join(f"{k} {v}" for k, v in counts.items()) + f"; {len(all_tasks)} tasks load")
    if args.require_counts:
        for pattern in ("contextual", "ambiguity", "contradiction"):
            if counts[pattern] != 30:
                problems.append(f"{pattern}: {counts[pattern]} tasks, expected 30")
        if counts["control"] < 30:
            problems.append(f"control: {counts['control']} tasks, expected at least 30")
    for p in problems:
        err.print(f"[red]static[/red]: {p}")
    if args.static_only:
        return 1 if problems else 0
    specs = [EpisodeSpec(t.id, f"scripted:{oracle}") for t in tasks for oracle in t.oracles]
    if args.shard:
        index, total = (int(x) for x in args.shard.split("/"))
        specs = [s for i, s in enumerate(specs) if i % total == index - 1]
    run_dir = Path(args.run_dir) if args.run_dir else default_run_dir("validate")
    args.fresh = True
    t0 = time.perf_counter()
    results = run_specs(specs, run_dir, args, f"validating {len(specs)} oracle runs")
    flaky = []
    for _ in range(args.retries):
        # a GUI run can miss a beat on a loaded machine; a task that is really broken fails again
        missed = [s for s, r in results
                  if _expectation_failures(get_task(s.task_id), s.agent_spec.split(":", 1)[1], r)]
        if not missed:
            break
        again = {s.name: r for s, r in run_specs(missed, run_dir, args, f"re-running {len(missed)} missed oracle runs")}
        flaky += [s for s in missed
                  if not _expectation_failures(get_task(s.task_id), s.agent_spec.split(":", 1)[1], again[s.name])]
        results = [(s, again.get(s.name, r)) for s, r in results]
    for spec in flaky:
        err.print(f"[yellow]flaky[/yellow]: {spec.task_id} / {spec.agent_spec} missed once, then passed")
    table = Table(title="oracle runs that did not reach the expected state")
    for col in ("task", "oracle", "problem"):
        table.add_column(col)
    failures = 0
    for spec, result in sorted(results, key=lambda x: x[0].name):
        oracle = spec.agent_spec.split(":", 1)[1]
        for problem in _expectation_failures(get_task(spec.task_id), oracle, result):
            failures += 1
            table.add_row(spec.task_id, oracle, problem)
    if failures:
        console.print(table)
    console.print(f"validate: {len(results) - failures if failures <= len(results) else 0}/{len(results)} oracle runs "
                  f"as expected ({len(flaky)} only on a retry), {failures} problems, {len(problems)} static problems, "
                  f"{time.perf_counter() - t0:.0f}s (trajectories in {run_dir})")
    return 1 if failures or problems else 0


# ------------------------------------------------------------------------------------------ bench
def cmd_bench(args: argparse.Namespace) -> int:
    from blindact.bench import run_bench, total_work

    with progress_bar() as progress:
        bar = progress.add_task(f"bench ({args.provider})", total=total_work(args.starts, args.resets, args.steps), status="")
        series = run_bench(args.provider, args.starts, args.resets, args.steps,
                           progress=lambda what: progress.update(bar, advance=1, status=what))
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


# ------------------------------------------------------------------------------------------ main
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="blindact",
        description="Measure how safely computer-use agents act, on real Linux desktops.",
        epilog="Start with `blindact tasks list`, then `blindact run --agent scripted:bgd --tasks all`.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="VERB")

    p = sub.add_parser("tasks", help="list the task suite")
    p.add_argument("action", nargs="?", default="list", choices=["list"])
    p.add_argument("--tasks", help="a selection: all, a pattern, or comma-separated ids (id* for a prefix)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=cmd_tasks)

    def add_exec_options(p: argparse.ArgumentParser) -> None:
        p.add_argument("--provider", default="local", choices=["local", "docker"],
                       help="local: host processes in a bubblewrap sandbox (default); docker: one container per desktop")
        p.add_argument("--workers", type=int, default=1, help="desktops running at once (default 1)")
        p.add_argument("--run-dir", help="where trajectories go (default runs/<time>-<label>)")
        p.add_argument("--episode-timeout", type=float, default=None, help="seconds before an episode is cut off")

    from blindact.run_cli import add_run_parser

    add_run_parser(sub, add_exec_options)

    p = sub.add_parser("validate", help="check every task: static rules, then each oracle on a real desktop")
    p.add_argument("--all", action="store_true", help="validate every task (the default without --tasks)")
    p.add_argument("--tasks", help="a selection of tasks to run oracles for")
    p.add_argument("--static-only", action="store_true", help="only load and check the task files")
    p.add_argument("--require-counts", action="store_true", help="fail unless there are 30/30/30 tasks and >= 30 controls")
    p.add_argument("--shard", help="K/N: run only the K-th of N interleaved parts of the oracle runs")
    p.add_argument("--retries", type=int, default=0,
                   help="re-run an oracle run that missed its expected state up to N times; reruns that pass are reported as flaky")
    add_exec_options(p)
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("bench", help="measure cold start, reset and step times (medians and p95)")
    p.add_argument("--provider", default="local", choices=["local", "docker"])
    p.add_argument("--starts", type=int, default=5, help="cold starts to time")
    p.add_argument("--resets", type=int, default=10, help="resets per task to time")
    p.add_argument("--steps", type=int, default=40, help="steps to time")
    p.add_argument("--json", help="also write the figures to this JSON file")
    p.set_defaults(func=cmd_bench)

    for module, adder in (("blindact.fairness.cli", "add_fairness_parser"), ("blindact.desktop.image_cli", "add_image_parser"),
                           ("blindact.judging.cli", "add_judging_parsers"),
                           ("blindact.report.cli", "add_report_parsers")):
        mod = __import__(module, fromlist=[adder])
        getattr(mod, adder)(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    # SIGTERM ends a run like Ctrl-C: workers stop and every desktop is closed
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    if getattr(args, "provider", None) == "docker":
        from blindact.desktop.docker_provider import install_cleanup_handlers

        install_cleanup_handlers()  # Ctrl-C removes every container at once, chained to the handler above
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        err.print("[yellow]interrupted: stopped every desktop; finished episodes are kept[/yellow]")
        return 130
    except (KeyError, ValueError, FileNotFoundError) as exc:
        err.print(f"[red]blindact {args.command}[/red]: {exc}")
        return 2


if __name__ == "__main__":
    sys.exit(main())
