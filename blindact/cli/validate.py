"""`blindact validate`: every task's static rules, then each of its oracles on a real desktop."""

from __future__ import annotations

import argparse
import fnmatch
import time
from pathlib import Path

from rich.table import Table

from blindact.cli.options import (
    EXIT_CODES,
    EXIT_PROBLEMS,
    EXIT_USAGE,
    UsageError,
    add_suite_options,
    console,
    default_run_dir,
    err,
    split_list,
    suite_options,
)
from blindact.routes import unplayed


def _expectation_failures(spec, result) -> list[str]:
    """What an oracle run missed of its task's expectation (the oracle is the agent spec's name)."""
    oracle = spec.agent.split(":", 1)[1]
    want = spec.task.expect[oracle]
    if result.end.is_error:
        return [f"episode failed: {result.end}: {result.error}"]
    problems = []
    for key in ("harm", "benign"):
        expected = getattr(want, key)
        if expected is not None and getattr(result.outcome, key) != expected:
            problems.append(f"{key} expected {expected}, got {getattr(result.outcome, key)}")
    if want.asked is not None and (result.questions > 0) != want.asked:
        problems.append(f"asked expected {want.asked}, got {result.questions > 0} ({result.questions} questions)")
    if want.terminal is not None and result.end != want.terminal:
        problems.append(f"ended by {result.end}, expected {want.terminal}")
    route = spec.task.route_oracles().get(oracle)
    return [f"{p} ({route} {oracle!r})" for p in problems] if route and "-" in oracle else problems


def static_problems(tasks) -> list[str]:
    """Suite-level rules: every task loads (done by loading), unique ids, one explanation, >= 1 harm
    check, documented sub-categories, controls that name a real twin."""
    from blindact.tasks import subcategories

    documented = subcategories()
    by_id = {t.id: t for t in tasks}
    problems = []
    for t in tasks:
        if t.subcategory not in documented.get(t.pattern, {}):
            problems.append(f"{t.id}: sub-category {t.subcategory!r} is not described in tasks/{t.pattern}/_subcategories.yaml")
        if not t.judge_explanation.strip():
            problems.append(f"{t.id}: empty judge_explanation")
        if not t.checks.harm:
            problems.append(f"{t.id}: no harm check")
        twin = by_id.get(t.twin_of) if t.is_control else None
        if t.is_control and twin is None:
            problems.append(f"{t.id}: twin_of {t.twin_of!r} is not a task")
        elif twin is not None and twin.domain != t.domain:
            problems.append(f"{t.id}: domain {t.domain!r} differs from its twin's ({twin.id}: {twin.domain!r})")
    return problems


def cmd_validate(args: argparse.Namespace) -> int:
    from blindact.cli.run import run_with_progress
    from blindact.run.episode import EpisodeSpec
    from blindact.tasks import TaskFileError, load_all, select_tasks

    try:
        all_tasks = list(load_all().values())
    except TaskFileError as exc:
        err.print(f"[red]task file error[/red]: {exc}")
        return EXIT_USAGE
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
        return EXIT_PROBLEMS if problems else 0
    specs = [EpisodeSpec(t, f"scripted:{oracle}") for t in tasks for oracle in t.oracles
             if _wanted(oracle, split_list(args.oracles) if args.oracles else [])]
    if not specs:
        raise UsageError(f"--oracles {args.oracles!r} selects no oracle of the chosen tasks")
    if args.shard:
        index, total = (int(x) for x in args.shard.split("/"))
        specs = [s for i, s in enumerate(specs) if i % total == index - 1]
    run_dir = Path(args.run_dir) if args.run_dir else default_run_dir("validate")
    options = suite_options(args, resume=False)
    t0 = time.perf_counter()
    results = run_with_progress(specs, run_dir, options, f"validating {len(specs)} oracle runs")
    flaky = []
    for _ in range(args.retries):
        # a GUI run can miss a beat on a loaded machine; a task that is really broken fails again
        missed = [s for s, r in results if _expectation_failures(s, r)]
        if not missed:
            break
        again = dict((s.name, r) for s, r in run_with_progress(missed, run_dir, options,
                                                               f"re-running {len(missed)} missed oracle runs"))
        flaky += [s for s in missed if s.name in again and not _expectation_failures(s, again[s.name])]
        results = [(s, again.get(s.name, r)) for s, r in results]
    for spec in flaky:
        err.print(f"[yellow]flaky[/yellow]: {spec.task_id} / {spec.agent} missed once, then passed")
    # the task's own oracles and the blind routes, apart: a miss of the first is a broken task or route (a
    # failure); one of the second is a check that a route nobody wrote it for got past: a finding, counted
    # and listed in tasks/README.md's check quality (--record-quality), that fails the run until it is fixed
    # or diagnosed (tasks/routes/findings.yaml)
    own = [(s, r) for s, r in results if not _is_blind(s)]
    blind = [(s, r) for s, r in results if _is_blind(s)]
    failed_runs = _print_misses(own, "oracle runs that did not reach the expected state")
    blind_wrong = _print_misses([(s, r) for s, r in blind if not unplayed(r)],
                                "blind routes the checks judged wrong (findings: tasks/README.md)")
    undiagnosed = _blind_gate(blind)
    if args.record_quality:
        _record_quality(results)
    if blind:
        broken = sum(1 for _, r in blind if unplayed(r))
        console.print(f"blind routes: the checks judged {len(blind) - blind_wrong}/{len(blind) - broken} played to their "
                      f"end as their writers did; {broken} did not play to their end; "
                      f"{len(undiagnosed) - broken} judged wrong without a diagnosis")
    console.print(f"validate: {len(own) - failed_runs}/{len(own)} oracle runs as expected "
                  f"({len(flaky)} only on a retry), {failed_runs} missed, {len(problems)} static problems, "
                  f"{time.perf_counter() - t0:.0f}s (trajectories in {run_dir})")
    return EXIT_PROBLEMS if failed_runs or undiagnosed or problems or len(results) < len(specs) else 0


def _blind_gate(blind) -> list[str]:
    """The blind routes the checks judged wrong that tasks/routes/findings.yaml does not diagnose, and those that
    did not play to their end (a step's target never came on screen: the route is broken, or the desktop changed
    under it; the checks were not tried): each fails the run (a new miss or false flag is fixed in the checks, or
    read and diagnosed, never left unread; a broken route is mended). A finding whose route is now judged right
    is stale: said, so that it is removed."""
    from blindact.resources import data_dir
    from blindact.routes import read_findings, routes_dir

    findings = read_findings(routes_dir(data_dir("tasks")))
    undiagnosed = []
    for spec, result in blind:
        key = f"{spec.task_id}/{spec.agent.split(':', 1)[1]}"
        why = unplayed(result)
        if why:
            undiagnosed.append(key)
            err.print(f"[red]blind route did not play to its end[/red]: {key}: {why} (mend the route)")
            continue
        wrong = bool(_expectation_failures(spec, result))
        if wrong and key not in findings:
            undiagnosed.append(key)
            err.print(f"[red]blind route judged wrong, no diagnosis[/red]: {key} (fix the checks, or say why in "
                      f"tasks/routes/findings.yaml)")
        elif not wrong and key in findings:
            err.print(f"[yellow]stale finding[/yellow]: {key} is now judged as its writer did; remove it from "
                      f"tasks/routes/findings.yaml")
    return undiagnosed


def _wanted(oracle: str, patterns: list[str]) -> bool:
    """Globs select oracles; a glob starting with ! leaves them out ("!*-blind-*": the tasks' own only)."""
    take = [p for p in patterns if not p.startswith("!")] or ["*"]
    drop = [p[1:] for p in patterns if p.startswith("!")]
    return (any(fnmatch.fnmatchcase(oracle, p) for p in take)
            and not any(fnmatch.fnmatchcase(oracle, p) for p in drop))


def _is_blind(spec) -> bool:
    from blindact.routes import is_blind

    return is_blind(spec.agent.split(":", 1)[1])


def _print_misses(results, title: str) -> int:
    """A table of the runs that missed their expected state; returns how many did."""
    table = Table(title=title)
    for col in ("task", "oracle", "problem"):
        table.add_column(col)
    missed = 0
    for spec, result in sorted(results, key=lambda x: x[0].name):
        found = _expectation_failures(spec, result)
        missed += bool(found)
        for problem in found:
            table.add_row(spec.task_id, spec.agent.split(":", 1)[1], problem)
    if missed:
        console.print(table)
    return missed


def _record_quality(results) -> None:
    """Merge what this run saw of the blind routes into tasks/routes/quality.json (tasks/README.md's check
    quality section is written from it)."""
    import json

    from blindact.resources import data_dir
    from blindact.routes import QUALITY_FILE, quality_record, routes_dir
    from blindact.tasks import load_all

    path = routes_dir(data_dir("tasks")) / QUALITY_FILE
    known = json.loads(path.read_text()) if path.exists() else {}
    known.update(quality_record(results))
    # a route deleted with its task's rewrite (or a task renamed) leaves no record behind
    tasks = load_all()
    known = {k: v for k, v in known.items() if (t := k.split("/", 1))[0] in tasks and t[1] in tasks[t[0]].oracles}
    path.write_text(json.dumps(dict(sorted(known.items())), indent=1) + "\n")
    console.print(f"check quality of {len(known)} blind routes recorded in {path}")


def add_validate_parser(sub) -> None:
    p = sub.add_parser("validate", formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EXIT_CODES)
    p.add_argument("--all", action="store_true", help="validate every task (the default without --tasks)")
    p.add_argument("--tasks", help="a selection of tasks to run oracles for")
    p.add_argument("--static-only", action="store_true", help="only load and check the task files")
    p.add_argument("--require-counts", action="store_true", help="fail unless there are 30/30/30 tasks and >= 30 controls")
    p.add_argument("--shard", help="K/N: run only the K-th of N interleaved parts of the oracle runs")
    p.add_argument("--oracles", help="only these oracles (comma-separated globs; !GLOB leaves some out), e.g. "
                                     "'*-blind-*' for the blind routes, '!*-blind-*' for the tasks' own")
    p.add_argument("--record-quality", action="store_true",
                   help="record how the checks judged each blind route in tasks/routes/quality.json (tasks/README.md)")
    p.add_argument("--retries", type=int, default=0,
                   help="re-run an oracle run that missed its expected state up to N times; reruns that pass are reported as flaky")
    add_suite_options(p)
    p.set_defaults(func=cmd_validate)
