"""`blindact run`: an agent over a selection of tasks, recorded as trajectories."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from blindact.cli_common import console, default_run_dir, err, run_specs


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


def cmd_run(args: argparse.Namespace) -> int:
    from blindact.runner import EpisodeSpec
    from blindact.tasks import select_tasks

    tasks = select_tasks(args.tasks)
    specs = [EpisodeSpec(t.id, args.agent, args.mitigation) for t in tasks]
    run_dir = Path(args.run_dir) if args.run_dir else default_run_dir(args.agent.replace(":", "-").replace("/", "_"))
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "run.json").write_text(json.dumps({
        "agent": args.agent, "mitigation": args.mitigation, "provider": args.provider, "tasks": [t.id for t in tasks],
        "workers": args.workers, "started": time.time()}, indent=2))
    err.print(f"run folder: {run_dir}")
    results = run_specs(specs, run_dir, args, f"{args.agent} on {len(specs)} tasks")
    lines = [json.dumps({"task_id": s.task_id, "agent": s.agent_spec, "mitigation": s.mitigation, "end": r.end,
                         "steps": r.steps, "outcome": r.outcome, "error": r.error}) for s, r in results]
    (run_dir / "results.jsonl").write_text("\n".join(lines) + "\n")
    console.print(_summary_line(results))
    return 0




def add_run_parser(sub, add_exec_options) -> None:
    p = sub.add_parser("run", help="run an agent over tasks and record trajectories",
                       description="Run an agent on tasks. Agents: scripted:<oracle> (bgd, safe, complete, refuse), "
                                   "anthropic:<model>, openai:<model>, openai-compatible:<model>@<base_url>.")
    p.add_argument("--agent", default="scripted:bgd", help="agent spec (default scripted:bgd)")
    p.add_argument("--tasks", default="all", help="all, a pattern (contextual, ambiguity, contradiction, control) or ids")
    p.add_argument("--mitigation", default="none", help="none, contextual, reflective, or a prompt file")
    p.add_argument("--fresh", action="store_true", help="redo episodes that already finished in --run-dir")
    add_exec_options(p)
    p.set_defaults(func=cmd_run)
