"""`blindact run` (an agent over tasks) and `blindact compare` (agents x mitigations over the same
tasks and seeds, then one report): both record into a run folder's store and resume from it."""

from __future__ import annotations

import argparse
import sys
import time
from contextlib import contextmanager
from pathlib import Path

from blindact.cli.options import (
    EXIT_ALL_ERRORS,
    EXIT_BUDGET,
    EXIT_CODES,
    EXIT_OK,
    EXIT_SOME_ERRORS,
    UsageError,
    add_agent_options,
    add_budget_options,
    add_suite_options,
    agent_options_of,
    budget_of,
    console,
    default_run_dir,
    err,
    port_number,
    preflight,
    split_list,
    suite_options,
)

# The demo comparison `blindact compare` runs without arguments: three scripted stand-ins that span
# the trade-off the report is about (blind, careful, over-cautious).
DEFAULT_AGENTS = "scripted:bgd/complete,scripted:safe/complete,scripted:safe/refuse"


def build_specs(agents: list[str], mitigations: list[str], task_selection: str, repeats: int = 1):
    """The episodes of a run; task ids are resolved here, once (the command line is the boundary)."""
    from blindact.run.episode import EpisodeSpec
    from blindact.tasks import select_tasks

    if repeats < 1:
        raise UsageError(f"--repeats must be at least 1, got {repeats}")
    try:
        tasks = select_tasks(task_selection)
    except KeyError as exc:
        raise UsageError(str(exc).strip("'\"")) from None
    if not tasks:
        raise UsageError(f"--tasks {task_selection!r} selects no task")
    # repeats round-robin: the first pass over the tasks ends before the second starts, so an interrupted
    # run holds whole passes, and drift over a long run touches every task alike
    return [EpisodeSpec(t, a, m, seed) for a in agents for m in mitigations for seed in range(repeats) for t in tasks]


def run_with_progress(specs, run_dir: Path, options, title: str, *, config: dict | None = None, board=None):
    """Run episodes with progress (a bar on a terminal, a line every 30 s in a log); returns
    [(spec, result)]. The versions of what ran are recorded with the run and every episode. `board`:
    the live view's (blindact.run.watch), fed every step and every finished episode."""
    from blindact.cli.progress import JobProgress
    from blindact.provenance import environment_versions
    from blindact.run.suite import run_suite

    started: dict[str, int] = {}
    with JobProgress(title, len(specs)) as progress:
        def on_start(spec):
            started[spec.name] = progress.start(spec.task_id)

        def on_result(spec, result):
            progress.finish(started.pop(spec.name, None), failed=result.end.is_error)
            if board is not None:
                board.finished(spec, result)

        try:
            return run_suite(specs, run_dir, options, on_start=on_start, on_result=on_result, config=config,
                             on_step=board.stepped if board is not None else None,
                             versions=environment_versions(provider=options.provider, **options.provider_options))
        finally:
            if board is not None:
                board.end()


@contextmanager
def watching(port: int | None, run_dir: Path, specs):
    """The live view on 127.0.0.1:port (0: a free port) while the block runs, its URL printed first;
    yields its board (None without --watch). On a terminal it stays up after the run until Enter."""
    if port is None:
        yield None
        return
    from blindact.run.watch import HOST, Board, WatchServer

    board = Board(run_dir, specs)
    try:
        server = WatchServer(board, port)
    except OSError as exc:
        raise UsageError(f"--watch {port}: cannot serve the live view on {HOST}:{port}: {exc.strerror or exc}") from None
    with server:
        err.print(f"live view: {server.url}")
        yield board
        _linger(server.url)


def _linger(url: str) -> None:
    """Keep the live view (and the viewers it links) up after the run, on a terminal only."""
    if not sys.stdin.isatty():
        return
    err.print(f"live view still at {url}: press Enter to close it")
    try:
        sys.stdin.readline()
    except KeyboardInterrupt:
        pass


def summary_line(results) -> str:
    n = len(results)
    if n == 0:
        return "no episodes"
    harm = sum(1 for _, r in results if r.outcome.harm)
    benign = sum(1 for _, r in results if r.outcome.benign)
    errors = sum(1 for _, r in results if r.end.is_error)
    ends: dict[str, int] = {}
    for _, r in results:
        ends[str(r.end)] = ends.get(str(r.end), 0) + 1
    ending = ", ".join(f"{k} {v}" for k, v in sorted(ends.items()))
    return (f"{n} episodes: harm done in {harm} ({100 * harm / n:.0f}%), benign goal reached in {benign} "
            f"({100 * benign / n:.0f}%), errors {errors}; ended by {ending}")


def report_errors(results) -> int:
    """Print why episodes errored (the first few, in full) and return the run's exit code: 4 when no
    episode was measured (blindact.endings.rated: harm found before an error is measured), 3 when some
    ended in an error, else 0."""
    from blindact.endings import rated

    errored = [(s, r) for s, r in results if r.end.is_error]
    for spec, result in errored[:5]:
        kept = " (the harm it did is rated)" if rated(result.end, result.outcome.harm) else ""
        err.print(f"[red]{result.end}[/red] in {spec.name}{kept}: {result.error or '(no detail)'}")
    if len(errored) > 5:
        err.print(f"... and {len(errored) - 5} more episodes ended in errors (see the report or results.sqlite)")
    if results and not any(rated(r.end, r.outcome.harm) for _, r in results):
        err.print("[red]every episode ended in an error: nothing was measured[/red]")
        return EXIT_ALL_ERRORS
    return EXIT_SOME_ERRORS if errored else EXIT_OK


def _resume(run_dir: Path):
    from blindact.run.store import open_store
    from blindact.run.suite import specs_from_store

    with open_store(run_dir) as store:
        return specs_from_store(store)


def _start(args: argparse.Namespace, agents: list[str], mitigations: list[str], label: str):
    """(specs, run_dir, options, config) of a new run or a resumed one; preflight passed."""
    if args.resume:
        run_dir = Path(args.resume)
        specs, config = _resume(run_dir)
        args.provider = config.get("provider", args.provider)
        options = suite_options(args, agent_options=config.get("agent_options") or {})
        options.provider_options = config.get("provider_options", options.provider_options)
    else:
        specs = build_specs(agents, mitigations, args.tasks, args.repeats)
        run_dir = Path(args.run_dir) if args.run_dir else default_run_dir(label)
        options = suite_options(args, resume=not getattr(args, "fresh", False),
                                agent_options=agent_options_of(agents, args.agent_opt))
        config = options.config(specs, verb=args.command)
    options.budget = budget_of(args, [s.agent for s in specs])
    preflight(specs, options)
    return specs, run_dir, options, config


def _run(specs, run_dir: Path, options, config: dict, title: str, board=None):
    """Run the episodes; returns (results, why the run's budget stopped it or '')."""
    from blindact.run.budget import RunSpend

    err.print(f"run folder: {run_dir}")
    t0 = time.perf_counter()
    results = run_with_progress(specs, run_dir, options, title, config=config, board=board)
    stopped = RunSpend.of(options.budget, results).stopped(results, len(specs)) if options.budget else ""
    if len(results) < len(specs) and not stopped:
        err.print(f"[yellow]{len(specs) - len(results)} episodes not run; finish with "
                  f"`blindact run --resume {run_dir}`[/yellow]")
    console.print(summary_line(results) + f"; {time.perf_counter() - t0:.0f}s")
    return results, stopped


def _exit(results, stopped: str, left: int, run_dir: Path) -> int:
    """The run's exit code, the budget's last word when it stopped the run."""
    code = report_errors(results)
    if not stopped:
        return code
    rest = (f"the run stopped with {left} episodes not run; finish them with `blindact run --resume {run_dir}` "
            "and a bigger budget (--max-cost, --max-tokens)" if left else "it cut the last episodes short")
    err.print(f"[yellow]budget: {stopped}: {rest}[/yellow]")
    return EXIT_BUDGET


def cmd_run(args: argparse.Namespace) -> int:
    from blindact.report.build import compute
    from blindact.report.data import load
    from blindact.report.terminal import summary_table

    specs, run_dir, options, config = _start(args, [args.agent], [args.mitigation],
                                             args.agent.replace(":", "-").replace("/", "_"))
    with watching(args.watch, run_dir, specs) as board:
        results, stopped = _run(specs, run_dir, options, config, f"{args.agent} on {len(specs)} episodes", board)
        if results:
            console.print(summary_table(compute(load([run_dir]))["summary"], title=run_dir.name))
            console.print(f"report: blindact report {run_dir}")
    return _exit(results, stopped, len(specs) - len(results), run_dir)


def cmd_compare(args: argparse.Namespace) -> int:
    from blindact.cli.report import build_and_print

    agents, mitigations = split_list(args.agents), split_list(args.mitigations)
    if not args.resume and (not agents or not mitigations):
        raise UsageError("compare needs at least one agent (--agents) and one mitigation (--mitigations)")
    specs, run_dir, options, config = _start(args, agents, mitigations, "compare")
    arms = len({(s.agent, s.mitigation) for s in specs})
    with watching(args.watch, run_dir, specs) as board:
        results, stopped = _run(specs, run_dir, options, config, f"compare: {arms} arms, {len(specs)} episodes", board)
        if results:
            build_and_print([run_dir], args)
    return _exit(results, stopped, len(specs) - len(results), run_dir)


def _common(p: argparse.ArgumentParser, *, prices: bool) -> None:
    p.add_argument("--tasks", default="all", help="all, a pattern (contextual, ambiguity, contradiction, control), "
                                                  "or comma-separated ids (id* for a prefix)")
    p.add_argument("--repeats", type=int, default=1,
                   help="episodes per task, with seeds 0..N-1 (default 1); with 2 or more the report gives pass^k "
                        "and the tasks whose verdict flips between repeats")
    p.add_argument("--resume", metavar="RUN_DIR",
                   help="finish an interrupted run: its stored configuration and task specs are used")
    p.add_argument("--watch", nargs="?", const=0, type=port_number, metavar="PORT",
                   help="serve a live view of the run on http://127.0.0.1:PORT (a free port without PORT; "
                        "the URL is printed): per worker the screen, last actions, thought and progress, "
                        "and the finished episodes with their viewers")
    add_agent_options(p)
    add_suite_options(p)
    add_budget_options(p, prices=prices)


def add_run_parsers(sub) -> None:
    from blindact.agents import agent_kinds

    kinds = "; ".join(f"{k.prefix}: {k.summary}" for k in agent_kinds().values())
    p = sub.add_parser("run", formatter_class=argparse.RawDescriptionHelpFormatter,
                       description=f"Run an agent on tasks. Agents ({kinds}; or <module.path>:<Class>, your own). "
                                   "Results go to <run-dir>/results.sqlite; an interrupted run is finished by --resume.",
                       epilog=EXIT_CODES)
    p.add_argument("--agent", default="scripted:bgd", help="agent spec (default scripted:bgd)")
    p.add_argument("--mitigation", default="none", help="none, contextual, reflective, or a prompt file")
    p.add_argument("--fresh", action="store_true", help="redo episodes that already finished in --run-dir")
    _common(p, prices=True)
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("compare", formatter_class=argparse.RawDescriptionHelpFormatter,
                       description="Every agent under every mitigation on the same tasks and seeds, in one run "
                                   "folder, then one comparison report with paired tests (clustered by task; with "
                                   "--repeats, pass^k and the tasks whose verdict flips). Without arguments: three "
                                   "scripted stand-ins (blind, careful, over-cautious) on all tasks.",
                       epilog=EXIT_CODES)
    p.add_argument("--agents", default=DEFAULT_AGENTS, help=f"comma-separated agent specs (default {DEFAULT_AGENTS})")
    p.add_argument("--mitigations", default="none", help="comma-separated: none, contextual, reflective, prompt files")
    _common(p, prices=False)  # its --prices is the report's, and serves the budgets too
    from blindact.cli.report import add_report_options

    add_report_options(p)
    p.set_defaults(func=cmd_compare)
