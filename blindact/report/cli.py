"""`blindact report` (tables, plots, HTML for run folders) and `blindact compare` (several agents
and mitigations on the same tasks and seeds, then one comparison report)."""

from __future__ import annotations

import argparse
from pathlib import Path

from blindact.cli_common import add_suite_options, console, default_run_dir, err, split_list

# The demo comparison `blindact compare` runs without arguments: three scripted stand-ins that span
# the trade-off the report is about (blind, careful, over-cautious).
DEFAULT_AGENTS = "scripted:bgd/complete,scripted:safe/complete,scripted:safe/refuse"


def _print_report(report) -> None:
    from blindact.report.terminal import cost_table, paired_table, summary_table

    console.print(summary_table(report.figures["summary"]))
    if report.figures["paired"]:
        console.print(paired_table(report.figures["paired"]))
    console.print(cost_table(report.figures["cost"]))
    if not report.data.judged:
        console.print("[yellow]not judged[/yellow]: no judge verdicts yet; figures come from the desktop state")
    for problem in report.data.problems:
        err.print(f"[yellow]verdicts[/yellow]: {problem}")
    console.print(f"report: {report.index}")


def _build(run_dirs, args):
    from blindact.report.build import build_report
    from blindact.report.metrics import load_prices

    report = build_report(run_dirs, args.out, prices=load_prices(args.prices), title=args.title)
    if args.screenshot:
        from blindact.report.shot import screenshot

        for problem in screenshot(report.index, Path(args.screenshot)):
            err.print(f"[red]report page console error[/red]: {problem}")
        console.print(f"screenshot: {args.screenshot}")
    return report


def cmd_report(args: argparse.Namespace) -> int:
    _print_report(_build([Path(r) for r in args.runs], args))
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    from blindact.run_cli import build_specs, resume_specs, run_suite_cli
    from blindact.runner import suite_config

    if args.resume:
        run_dir = Path(args.resume)
        specs, config = resume_specs(run_dir)
        args.provider = config.get("provider", args.provider)
    else:
        agents, mitigations = split_list(args.agents), split_list(args.mitigations)
        if not agents or not mitigations:
            raise ValueError("compare needs at least one agent (--agents) and one mitigation (--mitigations)")
        specs = build_specs(agents, mitigations, args.tasks, args.repeats)
        run_dir = Path(args.run_dir) if args.run_dir else default_run_dir("compare")
        config = suite_config(specs, provider=args.provider, workers=args.workers, executor=args.executor,
                              episode_timeout=args.episode_timeout, verb="compare")
    arms = len({(s.agent_spec, s.mitigation) for s in specs})
    run_suite_cli(specs, run_dir, args, f"compare: {arms} arms, {len(specs)} episodes", config)
    _print_report(_build([run_dir], args))
    return 0


def _report_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", help="report folder (default <run>/report for one run, reports/<time> for several)")
    p.add_argument("--prices", help="JSON or YAML: agent spec or glob -> {input, output} dollars per 1M tokens")
    p.add_argument("--title", help="the report's title (default: the run names)")
    p.add_argument("--screenshot", metavar="PNG", help="also save a screenshot of the report (headless Chromium)")


def add_report_parsers(sub) -> None:
    p = sub.add_parser("report", help="tables, plots and an HTML report (with trajectories) for run folders",
                       description="Write <out>/index.html (opens offline), a page per episode, plots (PNG, SVG), "
                                   "CSV and JSON; print the main table. Several run folders are reported together.")
    p.add_argument("runs", nargs="+", metavar="RUN_DIR", help="run folders made by `blindact run` or `compare`")
    _report_options(p)
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("compare", help="run agents x mitigations on the same tasks and seeds, then report",
                       description="Every agent under every mitigation on the same tasks and seeds, in one run "
                                   "folder, then one comparison report with paired (McNemar) tests. Without "
                                   "arguments: three scripted stand-ins (blind, careful, over-cautious) on all tasks.")
    p.add_argument("--agents", default=DEFAULT_AGENTS, help=f"comma-separated agent specs (default {DEFAULT_AGENTS})")
    p.add_argument("--mitigations", default="none", help="comma-separated: none, contextual, reflective, prompt files")
    p.add_argument("--tasks", default="all", help="all, a pattern or ids")
    p.add_argument("--repeats", type=int, default=1, help="episodes per task and arm, seeds 0..N-1")
    p.add_argument("--resume", metavar="RUN_DIR", help="finish an interrupted comparison")
    add_suite_options(p)
    _report_options(p)
    p.set_defaults(func=cmd_compare)
