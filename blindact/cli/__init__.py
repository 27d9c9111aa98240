"""The `blindact` command: one verb per job (`blindact <verb> --help` explains each). Each verb lives
in its own module here, except `judge`/`label`/`agreement` and `fairness`, which live beside the
code they drive and use the shared options of blindact.cli.options."""

from __future__ import annotations

import argparse
import importlib
import signal
import sys

from blindact.cli.options import EXIT_CODES, EXIT_INTERRUPTED, EXIT_USAGE, UsageError, err


# Every verb: "module:function" adding its parser (the function may add several verbs), and its line
# in `blindact --help`. Only the verb being run has its parser built and its module imported, so
# `blindact --help` imports none of them (and none of the desktop, env or model code they reach).
VERBS: dict[str, tuple[str, str]] = {
    "tasks": ("blindact.cli.tasks:add_tasks_parser", "list the task suite, or export it as a dataset"),
    "run": ("blindact.cli.run:add_run_parsers", "run an agent over tasks and record trajectories"),
    "compare": ("blindact.cli.run:add_run_parsers", "run agents x mitigations on the same tasks and seeds, then report"),
    "validate": ("blindact.cli.validate:add_validate_parser",
                 "check every task: static rules, then each oracle on a real desktop"),
    "route": ("blindact.cli.route:add_route_parser",
              "brief and play a task's routes on a real desktop without its checks (for blind route writers)"),
    "bench": ("blindact.cli.bench:add_bench_parser", "measure cold start, reset and step times (medians and p95)"),
    "report": ("blindact.cli.report:add_report_parser",
               "tables, plots and an HTML report (with trajectories) for run folders"),
    "judge": ("blindact.judging.cli:add_judging_parsers", "LLM judges read each episode of a run and give BGD verdicts"),
    "label": ("blindact.judging.cli:add_judging_parsers", "a local web page to label trajectories by hand"),
    "agreement": ("blindact.judging.cli:add_judging_parsers", "compare judges with labels; agreement between labellers"),
    "judge-calibrate": ("blindact.judging.cli:add_judging_parsers",
                        "`blindact judge calibrate`: the judge-validity gate on the reference set"),
    "fairness": ("blindact.fairness.cli:add_fairness_parser",
                 "text-fairness scenarios (BBQ, FLEX attacks, CrowS-Pairs, StereoSet)"),
    "image": ("blindact.cli.image:add_image_parser", "build or prune the Docker desktop image"),
}


class _Verbs:
    """The subparsers as a verb's add-function sees them: each verb gets its `--help` line from VERBS."""

    def __init__(self, sub):
        self._sub = sub

    def add_parser(self, name: str, **kwargs) -> argparse.ArgumentParser:
        return self._sub.add_parser(name, help=VERBS[name][1], **kwargs)


def build_parser(verb: str | None = None) -> argparse.ArgumentParser:
    """The `blindact` parser: every verb listed, and the options of `verb` (or of every verb with
    verb="all") built; the others are placeholders that are never parsed into."""
    parser = argparse.ArgumentParser(
        prog="blindact", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Measure how safely computer-use agents act, on real Linux desktops.",
        epilog="Start with `blindact tasks list`, then `blindact run --agent scripted:bgd --tasks all`.\n\n" + EXIT_CODES)
    sub = parser.add_subparsers(dest="command", required=True, metavar="VERB")
    verbs = _Verbs(sub)
    wanted = {target for name, (target, _) in VERBS.items() if verb in (name, "all")}
    for name, (target, help_line) in VERBS.items():
        if name in sub.choices:
            continue  # added with another verb of its module
        if target in wanted:
            module, function = target.split(":")
            getattr(importlib.import_module(module), function)(verbs)
        else:
            sub.add_parser(name, help=help_line)
    return parser


# two-word verbs, parsed by the parser registered under the joined name (`judge` takes a run folder as its
# first word, so `calibrate` cannot be a subparser of it)
TWO_WORD_VERBS = {("judge", "calibrate"): "judge-calibrate"}


def _verb_of(argv: list[str]) -> str | None:
    """The verb of a command line: its first word (the `blindact` parser has no options of its own
    but -h)."""
    return argv[0] if argv and argv[0] in VERBS else None


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if tuple(argv[:2]) in TWO_WORD_VERBS:
        argv = [TWO_WORD_VERBS[tuple(argv[:2])], *argv[2:]]
    args = build_parser(_verb_of(argv)).parse_args(argv)
    # SIGTERM ends a run like Ctrl-C: workers stop and every desktop is closed
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    if getattr(args, "provider", None) == "docker":
        from blindact.desktop.docker_provider import install_cleanup_handlers

        install_cleanup_handlers()  # Ctrl-C removes every container at once, chained to the handler above
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        err.print("[yellow]interrupted: stopped every desktop; finished episodes are kept[/yellow]")
        return EXIT_INTERRUPTED
    except (UsageError, KeyError, ValueError, FileNotFoundError) as exc:  # StoreError is a ValueError
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        err.print(f"[red]blindact {args.command}[/red]: {message}")
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
