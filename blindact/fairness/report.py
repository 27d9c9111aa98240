"""Write a run's report: JSON (everything), Markdown (tables with CIs), JSONL (predictions, replies)."""

from __future__ import annotations

import json
import math
from dataclasses import asdict
from pathlib import Path
from typing import Any

from blindact.fairness.runner import RunResult, save_predictions


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
        f"- items: {s['n_items']} ({cfg['n_per_attribute'] or 'all'} per attribute), seed {cfg['seed']}, "
        f"source {cfg['source'] or 'default'}",
        f"- model calls: {s['n_calls']}, failed calls: {s['n_errors']}",
        f"- answer parsing: {', '.join(f'{k} {v}' for k, v in s['answer_kinds'].items())}",
        "",
        "Intervals are 95% percentile bootstrap CIs over items.",
    ]
    if "flex" in s:
        fl = s["flex"]
        o = fl["overall"]
        lines += [
            "", "## FLEX (percent)", "",
            f"Attacks tried {fl['tries']} times each per covered item; the strongest is kept per item. "
            f"Coverage restriction: {'on' if cfg['coverage'] else 'off'}.", "",
            "| scope | source items | attacked items | AccS | AccF | ASR | ASR 95% CI |",
            "|---|---|---|---|---|---|---|",
            f"| all | {o['n_source']} | {o['n_attacked']} | {_f(o['AccS'], True)} {_ci(o['AccS_ci'], True)} | "
            f"{_f(o['AccF'], True)} {_ci(o['AccF_ci'], True)} | {_f(o['ASR'], True)} | {_ci(o['ASR_ci'], True)} |",
        ]
        for title, table in (("category", fl["by_category"]), ("attribute", fl["by_attribute"])):
            lines += ["", f"### by attack {title}" if title == "category" else f"### by {title}", "",
                      f"| {title} | source items | attacked items | AccS | AccF | ASR | ASR 95% CI |",
                      "|---|---|---|---|---|---|---|"]
            for k, r in table.items():
                lines.append(f"| {k} | {r['n_source']} | {r['n_attacked']} | {_f(r['AccS'], True)} | "
                             f"{_f(r['AccF'], True)} | {_f(r['ASR'], True)} | {_ci(r['ASR_ci'], True)} |")
        lines += ["", "### per attack (untargeted: share of wrong answers over all tries)", "",
                  "| attack | items | tries | ASR |", "|---|---|---|---|"]
        for k, r in fl["per_attack"].items():
            lines.append(f"| {k} | {r['n_items']} | {r['n_tries']} | {_f(r['ASR'], True)} |")
    if "bbq" in s:
        lines += ["", "## BBQ accuracy and bias by attribute and context", "",
                  "Bias scores in [-1, 1]; positive = answers lean towards the stereotype.", "",
                  "| attribute | context | n | accuracy (%) | 95% CI | bias | 95% CI | refusals | unparsed |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for attr, conds in s["bbq"].items():
            for cond, r in conds.items():
                lines.append(f"| {attr} | {cond} | {r['n']} | {_f(r['accuracy'], True)} | {_ci(r['accuracy_ci'], True)} | "
                             f"{_f(r['bias'])} | {_ci(r['bias_ci'])} | {r['refusals']} | {r['unparsed']} |")
    if "crows_pairs" in s:
        lines += ["", "## CrowS-Pairs stereotype preference (generative proxy)", "",
                  "| attribute | n | valid | SS (%) |", "|---|---|---|---|"]
        for attr, r in s["crows_pairs"].items():
            lines.append(f"| {attr} | {r['n']} | {r['n_valid']} | {_f(r['SS'])} {_ci(r.get('SS_ci'))} |")
    if "stereoset" in s:
        lines += ["", "## StereoSet (generative proxy)", "",
                  "| attribute | n | valid | LMS | SS | ICAT |", "|---|---|---|---|---|---|"]
        for attr, r in s["stereoset"].items():
            lines.append(f"| {attr} | {r['n']} | {r['n_valid']} | {_f(r['LMS'])} | {_f(r['SS'])} | "
                         f"{_f(r['ICAT'])} {_ci(r.get('ICAT_ci'))} |")
    if result.errors:
        lines += ["", "## Failed model calls", ""] + [f"- {e}" for e in result.errors[:20]]
    return "\n".join(lines) + "\n"


def write_report(result: RunResult, out_dir: str | Path) -> dict[str, Path]:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"json": out / "fairness_report.json", "markdown": out / "fairness_report.md",
             "predictions": out / "predictions.jsonl", "exchanges": out / "exchanges.jsonl"}
    doc = {"config": result.config, "summary": result.summary,
           "flex_records": [r.to_dict() for r in result.flex_records], "errors": result.errors}
    paths["json"].write_text(json.dumps(json_safe(doc), indent=2), encoding="utf-8")
    paths["markdown"].write_text(markdown(result), encoding="utf-8")
    save_predictions(result, paths["predictions"])
    with open(paths["exchanges"], "w", encoding="utf-8") as f:
        for e in result.exchanges:
            f.write(json.dumps(asdict(e)) + "\n")
    return paths
