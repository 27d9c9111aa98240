"""The `judge`, `label` and `agreement` verbs of the `blindact` command."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from rich.table import Table

from blindact.cli.options import console, err


def _pct(x: float | None) -> str:
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:.1f}%"


def _num(x: float | None) -> str:
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.2f}"


def _rate(records, field: str, patterns=None) -> float | None:
    chosen = [r for r in records if r.judged and getattr(r, field) is not None
              and (patterns is None or r.pattern in patterns)]
    return sum(bool(getattr(r, field)) for r in chosen) / len(chosen) if chosen else None


# ------------------------------------------------------------------------------------------ judge
def cmd_judge(args: argparse.Namespace) -> int:
    from blindact.judging.bgd import JudgeOptions
    from blindact.judging.cache import VerdictCache
    from blindact.judging.runs import episode_dirs, judge_run, judge_ties, state_agreement
    from blindact.llm import MissingAPIKey, ModelSpecError, parse_model_spec

    try:
        for spec in args.judge:
            parse_model_spec(spec)
    except ModelSpecError as exc:
        err.print(f"[red]blindact judge[/red]: {exc}")
        return 2
    run_dir = Path(args.run_dir)
    try:
        options = JudgeOptions(screenshots=args.screenshots, tree_chars=args.tree_chars, informed=args.informed,
                               attempts=args.attempts, samples=args.samples, temperature=args.temperature)
    except ValueError as exc:
        err.print(f"[red]blindact judge[/red]: {exc}")
        return 2
    if options.informed:
        err.print("[yellow]informed mode: the judge is shown the state checks, so its agreement with them is "
                  "circular and says nothing about the judge[/yellow]")
    cache = None if args.no_cache else VerdictCache()
    n = len(episode_dirs(run_dir)) * len(args.judge)
    err.print(f"judging {n // max(1, len(args.judge))} episodes of {run_dir} with {len(args.judge)} judge(s), "
              f"{options.mode} mode, {options.samples} sample(s) each")
    try:
        results = judge_run(run_dir, args.judge, options=options, workers=args.workers, cache=cache)
    except MissingAPIKey as exc:
        err.print(f"[red]blindact judge[/red]: {exc}")
        return 2
    table = Table(title=f"verdicts for {run_dir}")
    for col in ("judge", "judged", "unjudged", "cached", "BGD", "completion", "over-refusal", "tokens in/out",
                "judge vs state" + (" (circular: informed)" if options.informed else "")):
        table.add_column(col)
    for slug, records in results.items():
        judged = [r for r in records if r.judged]
        agreement = state_agreement(run_dir, slug)
        tokens_in = sum(r.usage.get("input_tokens", 0) for r in records)
        tokens_out = sum(r.usage.get("output_tokens", 0) for r in records)
        table.add_row(slug, str(len(judged)), str(len(records) - len(judged)), str(sum(r.cached for r in records)),
                      _pct(_rate(records, "bgd_intention")), _pct(_rate(records, "bgd_completion")),
                      _pct(_rate(records, "over_refusal", {"control"})), f"{tokens_in}/{tokens_out}",
                      f"{agreement.n_agree}/{agreement.n_compared} (κ {_num(agreement.kappa)})")
    console.print(table)
    for slug, records in results.items():
        for r in records:
            if not r.judged:
                err.print(f"[yellow]unjudged[/yellow] {slug} {r.episode}: {r.error}")
        for d in state_agreement(run_dir, slug).disagreements:
            console.print(f"[magenta]state disagreement[/magenta] {slug} {d['episode']}: state harm={d['state_harm']}, "
                          f"judge completion={d['judge_completion']} — {d['rationale'][:200]}")
    tied = judge_ties(run_dir)
    if tied:
        console.print(f"[magenta]to adjudicate[/magenta]: the judges tied on {len(tied)} trajectories (fields left null); "
                      f"they wait in the disagreement queue of `blindact label {run_dir} --labeller NAME` "
                      "(/disagreements) until a person labels them")
    console.print(f"verdicts written to {run_dir / 'judgements'}")
    return 0 if any(r.judged for records in results.values() for r in records) else 1


# ------------------------------------------------------------------------------------------ label
def cmd_label(args: argparse.Namespace) -> int:
    import uvicorn

    from blindact.judging.label_app import create_label_app, load_items

    sources = [Path(s) for s in args.runs]
    labels_dir = Path(args.labels_dir) if args.labels_dir else sources[0] / "labels"
    for d, why in load_items(sources)[1]:
        err.print(f"[yellow]cannot be labelled[/yellow] {d}: {why}")
    app = create_label_app(sources, labels_dir, args.labeller, seed=args.seed, labellers_needed=args.labellers_needed)
    console.print(f"labelling as {args.labeller!r}: open http://{args.host}:{args.port}/next (Ctrl-C to stop); "
                  f"labels go to {labels_dir / 'labels.sqlite'}")
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0


# ------------------------------------------------------------------------------------------ agreement
def _default_labels_dir(run_dir: Path) -> Path:
    from blindact.judging.rubric import judges_dir

    own = run_dir / "labels"
    return own if (own / "labels.sqlite").exists() else judges_dir() / "labels"


def cmd_agreement(args: argparse.Namespace) -> int:
    from blindact.judging.agreement import FIELDS, judge_agreement, labeller_agreement
    from blindact.judging.runs import judges_of

    run_dir = Path(args.run_dir)
    labels_dir = Path(args.labels_dir) if args.labels_dir else _default_labels_dir(run_dir)
    judges = args.judge or judges_of(run_dir)
    if not judges:
        err.print(f"[red]blindact agreement[/red]: {run_dir} has no judgements yet; run `blindact judge {run_dir} --judge ...` first")
        return 2
    report = {"labels": str(labels_dir / "labels.sqlite"), "judges": {}, "labellers": labeller_agreement(labels_dir)}
    for judge in judges:
        rep = judge_agreement(run_dir, judge, labels_dir, labeller=args.labeller, n_boot=args.bootstrap, seed=args.seed)
        report["judges"][judge] = rep
        kinds = ", ".join(rep["label_kinds"])
        table = Table(title=f"{rep['judge']} vs labels ({rep['labeller']}; kinds: {kinds}); "
                            f"{rep['matched']} matched, {rep['unjudged']} unjudged; CIs resample tasks")
        for col in ("field", "pattern", "n", "decided", "ties", "accuracy [95% CI]", "Cohen's κ [95% CI]",
                    "F1 [95% CI]", "tasks", "false yes", "missed yes"):
            table.add_column(col)
        for field in FIELDS:
            for pattern, m in rep["fields"].get(field, {}).items():
                ci = {k: m.get(k + "_ci", [None, None]) for k in ("accuracy", "kappa", "f1")}
                false, missed = m["errors"].values()
                table.add_row(field, pattern, str(m["n"]), str(m["n_decided"]), str(len(m["ties"])),
                              f"{_pct(m.get('accuracy'))} [{_pct(ci['accuracy'][0])}, {_pct(ci['accuracy'][1])}]",
                              f"{_num(m.get('kappa'))} [{_num(ci['kappa'][0])}, {_num(ci['kappa'][1])}]",
                              f"{_num(m.get('f1'))} [{_num(ci['f1'][0])}, {_num(ci['f1'][1])}]",
                              str(m.get("n_clusters") or "—"), str(len(false)), str(len(missed)))
        console.print(table)
        side = Table(title=f"{rep['judge']}: against the reference and against the state, on the same episodes")
        for col in ("field", "pattern", "n", "judge vs reference κ", "judge vs state κ", "state vs reference κ"):
            side.add_column(col)
        for field, per_pattern in rep["judge_vs_state"].items():
            for pattern, m in per_pattern.items():
                side.add_row(field, pattern, str(m["n"]), _num(m["judge_vs_reference"]["kappa"]),
                             _num(m["judge_vs_state"]["kappa"]), _num(m["state_vs_reference"]["kappa"]))
        console.print(side)
        if "informed" in rep["modes"]:
            console.print("[yellow]some verdicts were made in informed mode (the judge saw the state checks): "
                          "judge-vs-state agreement is circular[/yellow]")
        todo = rep["to_adjudicate"]
        if todo["judge_ties"]:
            console.print(f"[magenta]to adjudicate[/magenta]: the judges tied on {len(todo['judge_ties'])} episodes "
                          f"(counted in n, not in κ): {', '.join(todo['judge_ties'])}")
        if todo["label_disagreements"]:
            console.print(f"[magenta]to adjudicate[/magenta]: labellers disagree on {len(todo['label_disagreements'])} "
                          f"episodes (no gold label yet): {', '.join(todo['label_disagreements'])}")
        if "human" not in rep["label_kinds"] and "adjudicated" not in rep["label_kinds"]:
            console.print("[yellow]these labels are known by construction, not given by people: "
                          "agreement with them is a sanity check, not human agreement[/yellow]")
    between = report["labellers"]
    for field, data in between["fields"].items():
        for p in data["pairwise"]:
            console.print(f"labellers {p['a']} vs {p['b']}, {field}: n={p['n']}, agreement {_pct(p['accuracy'])}, κ {_num(p['kappa'])}")
        console.print(f"Fleiss' κ over {data['fleiss_n']} trajectories labelled by all, {field}: {_num(data['fleiss_kappa'])}")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2))
    return 0


def add_judging_parsers(sub) -> None:
    p = sub.add_parser("judge", help="LLM judges read each episode of a run and give BGD verdicts",
                       description="Each judge reads every episode (task, explanation, reasoning, actions, trimmed "
                                   "accessibility trees, key screenshots, the ending) and answers a validated verdict. "
                                   "It is not shown the state checks (blind mode) unless --informed; its verdicts are "
                                   "then compared with the state checks as a cross-check. Verdicts go to the run's store (results.sqlite) and a cross-run cache "
                                   "(BLINDACT_CACHE_DIR, default ~/.cache/blindact). With several judges a majority "
                                   "vote is stored as the judge 'vote'.")
    p.add_argument("run_dir", help="a run folder (holding episodes/)")
    p.add_argument("--judge", action="append", required=True, metavar="SPEC",
                   help="anthropic:<model>, openai:<model> or openai-compatible:<model>@<url>; repeat to vote")
    p.add_argument("--screenshots", type=int, default=4,
                   help="show K key screenshots: the last screen and those before and after the largest changes "
                        "(default 4; 0 for text-only judges)")
    p.add_argument("--tree-chars", type=int, default=3000, help="cap on each trimmed accessibility tree (default 3000)")
    p.add_argument("--informed", action="store_true",
                   help="also show the judge the state-check results (not blind: judge-vs-state agreement becomes circular)")
    p.add_argument("--samples", type=int, default=1,
                   help="answers per episode and judge, combined by majority (self-consistency; default 1)")
    p.add_argument("--temperature", type=float, default=None,
                   help="sampling temperature (default 0 for one sample, 0.7 for several)")
    p.add_argument("--attempts", type=int, default=3, help="answers asked for before an episode is unjudged (default 3)")
    p.add_argument("--workers", type=int, default=4, help="judge calls at once (default 4)")
    p.add_argument("--no-cache", action="store_true", help="ignore and do not fill the verdict cache")
    p.set_defaults(func=cmd_judge)

    p = sub.add_parser("label", help="a local web page to label trajectories by hand",
                       description="Serve a page where a person labels trajectories blind: no state checks, no "
                                   "agent or mitigation, opaque ids in a shuffled order. Each labeller runs it under "
                                   "their own name on the same --labels-dir; disagreements go to a queue for "
                                   "adjudication; /gold.jsonl exports the gold labels. Guide: judges/LABELLING.md.")
    p.add_argument("runs", nargs="+", help="run folders or episode folders")
    p.add_argument("--labeller", required=True, help="your name, stored with every label")
    p.add_argument("--labels-dir", help="where labels.sqlite goes (default <first run>/labels)")
    p.add_argument("--labellers-needed", type=int, default=2, help="people wanted per trajectory (default 2)")
    p.add_argument("--seed", type=int, default=0, help="seed of the shuffled order (default 0)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8765)
    p.set_defaults(func=cmd_label)

    p = sub.add_parser("agreement", help="compare judges with labels; agreement between labellers",
                       description="Per field and pattern: n (ties and unjudged episodes stay in it), accuracy, "
                                   "Cohen's kappa and F1 with bootstrap CIs that resample tasks, false and missed "
                                   "BGD; the judge against the state checks beside it; episodes to adjudicate.")
    p.add_argument("run_dir", help="a run folder that has been judged")
    p.add_argument("--judge", action="append", help="judge slug, model spec or 'vote' (default: every judge of the run)")
    p.add_argument("--labels-dir", help="folder of labels.sqlite (default <run>/labels, else the shipped judges/labels)")
    p.add_argument("--labeller", help="compare with this labeller only (default: the gold labels)")
    p.add_argument("--bootstrap", type=int, default=2000, help="bootstrap resamples (default 2000)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", help="also write the full report to this JSON file")
    p.set_defaults(func=cmd_agreement)
