"""`blindact run`: an agent over a selection of tasks, recorded in the run folder's store."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from blindact.cli_common import add_executor_options, console, default_run_dir, err, run_specs


def _summary_line(results) -> str:
    n = len(results)
    if n == 0:
        return "no episodes"
    harm = sum(1 for _, r in results if r.outcome.get("harm"))
    benign = sum(1 for _, r in results if r.outcome.get("benign"))
    errors = sum(1 for _, r in results if r.end in ("desktop_error", "agent_error", "timeout"))
    ends: dict[str, int] = {}
    for _, r in results:
        ends[r.end] = ends.get(r.end, 0) + 1
    ending = ", ".join(f"{k} {v}" for k, v in sorted(ends.items()))
    return (f"{n} episodes: harm done in {harm} ({100 * harm / n:.0f}%), benign goal reached in {benign} "
            f"({100 * benign / n:.0f}%), errors {errors}; ended by {ending}")


def build_specs(agents: list[str], mitigations: list[str], task_selection: str, repeats: int = 1):
    from blindact.runner import EpisodeSpec
    from blindact.tasks import select_tasks

    if repeats < 1:
        raise ValueError(f"--repeats must be at least 1, got {repeats}")
    tasks = select_tasks(task_selection)
    return [EpisodeSpec(t.id, a, m, seed) for a in agents for m in mitigations for t in tasks for seed in range(repeats)]


def resume_specs(run_dir: Path):
    """The specs and config a run folder was started with (for --resume)."""
    from blindact.runner import specs_from_config
    from blindact.store import open_store

    with open_store(run_dir) as store:
        run = store.run()
    if run is None or "episodes" not in run["config"]:
        raise ValueError(f"{run_dir}: the store has no run configuration to resume from")
    return specs_from_config(run["config"]), run["config"]


def run_suite_cli(specs, run_dir: Path, args, title: str, config: dict | None = None) -> list:
    """Shared by run and compare: run with live progress, write results.jsonl, print the summary."""
    from blindact.report.build import compute
    from blindact.report.data import load
    from blindact.report.terminal import summary_table

    run_dir.mkdir(parents=True, exist_ok=True)
    err.print(f"run folder: {run_dir}")
    t0 = time.perf_counter()
    results = run_specs(specs, run_dir, args, title, config=config, resume=not getattr(args, "fresh", False))
    lines = [json.dumps({"task_id": s.task_id, "agent": s.agent_spec, "mitigation": s.mitigation, "seed": s.seed,
                         "end": r.end, "steps": r.steps, "outcome": r.outcome, "error": r.error}) for s, r in results]
    (run_dir / "results.jsonl").write_text("\n".join(lines) + ("\n" if lines else ""))
    if len(results) < len(specs):
        err.print(f"[yellow]{len(specs) - len(results)} episodes not run; finish with "
                  f"`blindact run --resume {run_dir}`[/yellow]")
    console.print(summary_table(compute(load([run_dir]))["summary"], title=f"{run_dir.name}"))
    console.print(_summary_line(results) + f"; {time.perf_counter() - t0:.0f}s")
    return results


def cmd_run(args: argparse.Namespace) -> int:
    from blindact.runner import suite_config

    if args.resume:
        run_dir = Path(args.resume)
        specs, config = resume_specs(run_dir)
        args.provider = config.get("provider", args.provider)
        title = f"resuming {run_dir.name}"
    else:
        specs = build_specs([args.agent], [args.mitigation], args.tasks, args.repeats)
        run_dir = Path(args.run_dir) if args.run_dir else default_run_dir(args.agent.replace(":", "-").replace("/", "_"))
        config = suite_config(specs, provider=args.provider, workers=args.workers, executor=args.executor,
                              episode_timeout=args.episode_timeout, verb="run")
        title = f"{args.agent} on {len(specs)} episodes"
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / "run.json").write_text(json.dumps({
            "agent": args.agent, "mitigation": args.mitigation, "provider": args.provider,
            "tasks": config["tasks"], "workers": args.workers, "started": time.time()}, indent=2))
    run_suite_cli(specs, run_dir, args, title, config)
    console.print(f"report: blindact report {run_dir}")
    return 0


def add_run_parser(sub, add_exec_options) -> None:
    p = sub.add_parser("run", help="run an agent over tasks and record trajectories",
                       description="Run an agent on tasks. Agents: scripted:<oracle> (bgd, safe, complete, refuse; "
                                   "scripted:A/B plays A on BGD tasks and B on controls), anthropic:<model>, "
                                   "openai:<model>, openai-compatible:<model>@<base_url>. Results go to "
                                   "<run-dir>/results.sqlite; an interrupted run is finished by --resume.")
    p.add_argument("--agent", default="scripted:bgd", help="agent spec (default scripted:bgd)")
    p.add_argument("--tasks", default="all", help="all, a pattern (contextual, ambiguity, contradiction, control) or ids")
    p.add_argument("--mitigation", default="none", help="none, contextual, reflective, or a prompt file")
    p.add_argument("--repeats", type=int, default=1, help="episodes per task, with seeds 0..N-1 (default 1)")
    p.add_argument("--resume", metavar="RUN_DIR",
                   help="finish an interrupted run: its stored configuration is used, finished episodes are kept")
    p.add_argument("--fresh", action="store_true", help="redo episodes that already finished in --run-dir")
    add_exec_options(p)
    add_executor_options(p)
    p.set_defaults(func=cmd_run)
