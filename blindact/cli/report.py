"""`blindact report`: tables, plots and the HTML report of run folders (the report is also what
`blindact compare` ends with)."""

from __future__ import annotations

import argparse
from pathlib import Path

from blindact.cli.options import console, err


def add_report_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", help="report folder (default <run>/report for one run, reports/<time> for several)")
    p.add_argument("--prices", help="JSON or YAML: agent spec or glob -> {input, output} dollars per 1M tokens")
    p.add_argument("--title", help="the report's title (default: the run names)")
    p.add_argument("--screenshot", metavar="PNG", help="also save a screenshot of the report (headless Chromium)")


def build_and_print(run_dirs: list[Path], args: argparse.Namespace):
    from blindact.report.build import build_report
    from blindact.report.calibration import calibration_lines
    from blindact.prices import load_prices
    from blindact.report.terminal import cost_table, paired_table, repeats_table, summary_table

    report = build_report(run_dirs, args.out, prices=load_prices(args.prices), title=args.title)
    if args.screenshot:
        from blindact.report.shot import screenshot

        for problem in screenshot(report.index, Path(args.screenshot)):
            err.print(f"[red]report page console error[/red]: {problem}")
        console.print(f"screenshot: {args.screenshot}")
    console.print(summary_table(report.figures["summary"]))
    if report.figures["paired"]:
        console.print(paired_table(report.figures["paired"]))
    if report.figures["repeats"]:
        console.print(repeats_table(report.figures["repeats"]))
    console.print(cost_table(report.figures["cost"], report.figures["budgets"]))
    if not report.data.judged:
        console.print("[yellow]not judged[/yellow]: no judge verdicts yet; figures come from the desktop state")
    for line in calibration_lines(report.figures["calibration"]):
        console.print(line)
    for problem in report.data.problems:
        err.print(f"[yellow]verdicts[/yellow]: {problem}")
    console.print(f"report: {report.index}")
    return report


def cmd_report(args: argparse.Namespace) -> int:
    from blindact.fairness.report import write_html
    from blindact.fairness.stored import is_fairness_run

    runs = [Path(r) for r in args.runs]
    fairness = [r for r in runs if is_fairness_run(r)]  # text-fairness runs have their own report
    for run in fairness:
        console.print(f"report: {write_html(run, args.out if len(runs) == 1 else None)}")
    if len(fairness) < len(runs):
        build_and_print([r for r in runs if r not in fairness], args)
    return 0


def add_report_parser(sub) -> None:
    p = sub.add_parser("report", description="Write <out>/index.html (opens offline), a page per episode, plots (PNG, SVG), "
                                   "CSV and JSON; print the main table. Several run folders are reported together.")
    p.add_argument("runs", nargs="+", metavar="RUN_DIR", help="run folders made by `blindact run` or `compare`")
    add_report_options(p)
    p.set_defaults(func=cmd_report)
