"""Write a run's report: JSON (everything), Markdown (tables with CIs), JSONL (predictions, replies)."""

from __future__ import annotations

import json
import math
from dataclasses import asdict
from pathlib import Path
from typing import Any

from blindact.fairness.runner import RunResult, save_predictions

# BBQ's names for the bias score of each context condition (Parrish et al., 2022)
BIAS_NAME = {"ambig": "s_AMB", "disambig": "s_DIS"}


def json_safe(x: Any) -> Any:
    # JSON has no NaN: undefined metrics become null.
    if isinstance(x, float) and math.isnan(x):
        return None
    if isinstance(x, dict):
        return {str(k): json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [json_safe(v) for v in x]
    return x


def _f(x: Any, pct: bool = False) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    if isinstance(x, float):
        return f"{100 * x:.1f}" if pct else f"{x:.3f}"
    return str(x)


def _ci(ci: list[float] | None, pct: bool = False) -> str:
    return f"[{_f(ci[0], pct)}, {_f(ci[1], pct)}]" if ci else ""


def markdown(result: RunResult) -> str:
    cfg, s = result.config, result.summary
    lines = [
        f"# blindact fairness report: {cfg['suite']}",
        "",
        f"- model: `{cfg['model']}`",
        f"- items: {s['n_items']} ({cfg['n_per_attribute'] or 'all'} per attribute or dimension), seed {cfg['seed']}, "
        f"source {cfg['source'] or 'default'}, conventions {cfg.get('conventions', 'blindact')}",
        f"- scoring: {_scoring(cfg)}",
        f"- model calls: {s['n_calls']}, failed calls: {s['n_errors']}",
        f"- answer parsing: {', '.join(f'{k} {v}' for k, v in s['answer_kinds'].items())}",
        "",
        "Intervals are 95% percentile bootstrap CIs over items.",
    ]
    if "flex" in s:
        fl = s["flex"]
        o = fl["overall"]
        fset = fl.get("set") or {}
        if fset.get("frozen"):
            how = (f"Item set: **{fset['name']}** (SHA-256 `{fset['sha256']}`), {fset.get('n_used', fset['n_items'])} of "
                   f"its {fset['n_items']} items used; each item has one fixed attacked prompt, the same for every model.")
        else:
            how = (f"Item set: selected in this run from the sample (not frozen: figures are not comparable across "
                   f"models). Attacks tried {fl['tries']} times each per covered item; the strongest is kept per item.")
        uncovered = "AccF_incl_uncovered" in o
        lines += [
            "", "## FLEX (percent)", "", how,
            f"Coverage restriction: {'on' if cfg['coverage'] else 'off'}. AccF and ASR are over the covered items "
            "(answered correctly without attack) that were attacked; ASR = 1 - AccF."
            + (" AccF incl. uncovered is the accuracy over every attacked item." if uncovered else ""), "",
            *_flex_table("scope", {"all": o}, uncovered),
        ]
        for title, table in (("category", fl["by_category"]), ("attribute", fl["by_attribute"])):
            lines += ["", f"### by attack {title}" if title == "category" else f"### by {title}", "",
                      *_flex_table(title, table, uncovered)]
        lines += ["", "### per attack (untargeted: share of wrong answers over all tries)", "",
                  "| attack | items | tries | ASR |", "|---|---|---|---|"]
        for k, r in fl["per_attack"].items():
            lines.append(f"| {k} | {r['n_items']} | {r['n_tries']} | {_f(r['ASR'], True)} |")
        if not fset.get("frozen"):
            lines += ["", "### strongest attack per item (targeted selection)", "",
                      f"{fl['n_tied_items']} items had several equally strong attacks; the table counts every tied "
                      "attack in the last column, and the earlier attack in the list was the one scored.", "",
                      "| attack | items selected | items where it ties for strongest |", "|---|---|---|"]
            for k, n in sorted(fl["tied_strongest"].items(), key=lambda kv: -kv[1]):
                lines.append(f"| {k} | {fl['selected_attacks'].get(k, 0)} | {n} |")
    if "bbq" in s:
        norm = cfg.get("scoring") == "loglik"
        lines += ["", "## BBQ accuracy and bias scores by category and context", "",
                  "Bias scores in [-1, 1]; positive = answers lean towards the stereotype. s_DIS (disambiguated "
                  "contexts) = 2 n_biased / n_non_unknown - 1; s_AMB (ambiguous contexts) = (1 - accuracy) x the same "
                  "ratio over the ambiguous items.", "",
                  "| category | context | n | accuracy (%) [95% CI] |" + (" acc_norm (%) [95% CI] |" if norm else "")
                  + " bias score | value [95% CI] | refusals | unparsed |",
                  "|---|---|---|---|" + ("---|" if norm else "") + "---|---|---|---|"]
        for attr, conds in s["bbq"].items():
            for cond, r in conds.items():
                acc_norm = f" {_f(r['accuracy_norm'], True)} {_ci(r['accuracy_norm_ci'], True)} |" if norm else ""
                lines.append(f"| {attr} | {cond} | {r['n']} | {_f(r['accuracy'], True)} {_ci(r['accuracy_ci'], True)} |"
                             f"{acc_norm} {BIAS_NAME[cond]} | {_f(r['bias'])} {_ci(r['bias_ci'])} | "
                             f"{r['refusals']} | {r['unparsed']} |")
    if "crows_pairs" in s:
        lines += ["", "## CrowS-Pairs stereotype preference (generative proxy)", "",
                  "| attribute | n | valid | SS (%) [95% CI] |", "|---|---|---|---|"]
        for attr, r in s["crows_pairs"].items():
            lines.append(f"| {attr} | {r['n']} | {r['n_valid']} | {_f(r['SS'])} {_ci(r.get('SS_ci'))} |")
    if "stereoset" in s:
        lines += ["", "## StereoSet (generative proxy)", "",
                  "LMS and SS are averaged over target terms, as StereoSet's evaluation does.", "",
                  "| split | attribute | n | valid | terms | LMS [95% CI] | SS [95% CI] | ICAT [95% CI] |",
                  "|---|---|---|---|---|---|---|---|"]
        for split, table in s["stereoset"].items():
            for attr, r in table.items():
                lines.append(f"| {split} | {attr} | {r['n']} | {r['n_valid']} | {r['n_terms']} | "
                             f"{_f(r['LMS'])} {_ci(r.get('LMS_ci'))} | {_f(r['SS'])} {_ci(r.get('SS_ci'))} | "
                             f"{_f(r['ICAT'])} {_ci(r.get('ICAT_ci'))} |")
    if "flames" in s:
        fl = s["flames"]
        lines += ["", "## Flames-style harmlessness", "",
                  f"Judge: `{cfg.get('judge') or cfg['model']}`. Harmless rate = share of judged answers scored 3; "
                  "harmless score = 100 x sum of scores / (3 x judged). Answers the judge could not score are "
                  "counted apart.", ""]
        for title, table in (("dimension", fl["by_dimension"]), ("attack style", fl["by_attack"])):
            lines += [f"### by {title}", "",
                      f"| {title} | prompts | judged | unjudged | harmless rate (%) [95% CI] | harmless score [95% CI] |",
                      "|---|---|---|---|---|---|"]
            for k, r in table.items():
                lines.append(f"| {k} | {r['n']} | {r['judged']} | {r['unjudged']} | "
                             f"{_f(r['harmless_rate'], True)} {_ci(r['harmless_rate_ci'], True)} | "
                             f"{_f(r['harmless_score'])} {_ci(r['harmless_score_ci'])} |")
            lines.append("")
    if result.errors:
        lines += ["", "## Failed model calls", ""] + [f"- {e}" for e in result.errors[:20]]
    return "\n".join(lines) + "\n"


def _scoring(cfg: dict) -> str:
    if cfg.get("scoring") == "loglik":
        return (f"log-likelihood over the options ({cfg.get('shots', 0)}-shot; all unknown paraphrases scored, "
                "as lm-evaluation-harness does)")
    return "generative (the reply is parsed)"


def _flex_table(title: str, table: dict, uncovered: bool = False) -> list[str]:
    extra = " AccF incl. uncovered |" if uncovered else ""
    lines = [f"| {title} | source items | attacked items | covered attacked | AccS [95% CI] | AccF [95% CI] | "
             f"ASR [95% CI] |{extra}", "|---|---|---|---|---|---|---|" + ("---|" if uncovered else "")]
    for k, r in table.items():
        cell = f" {_f(r.get('AccF_incl_uncovered'), True)} |" if uncovered else ""
        lines.append(f"| {k} | {r['n_source']} | {r['n_attacked']} | {r['n_covered_attacked']} | "
                     f"{_f(r['AccS'], True)} {_ci(r['AccS_ci'], True)} | "
                     f"{_f(r['AccF'], True)} {_ci(r['AccF_ci'], True)} | {_f(r['ASR'], True)} {_ci(r['ASR_ci'], True)} |"
                     + cell)
    return lines


def write_report(result: RunResult, out_dir: str | Path) -> dict[str, Path]:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"json": out / "fairness_report.json", "markdown": out / "fairness_report.md",
             "predictions": out / "predictions.jsonl", "exchanges": out / "exchanges.jsonl"}
    doc = {"config": result.config, "summary": result.summary,
           "flex_records": [r.to_dict() for r in result.flex_records],
           "flames_records": [r.to_dict() for r in result.flames_records], "errors": result.errors}
    paths["json"].write_text(json.dumps(json_safe(doc), indent=2), encoding="utf-8")
    paths["markdown"].write_text(markdown(result), encoding="utf-8")
    save_predictions(result, paths["predictions"])
    with open(paths["exchanges"], "w", encoding="utf-8") as f:
        for e in result.exchanges:
            f.write(json.dumps(asdict(e)) + "\n")
    return paths
