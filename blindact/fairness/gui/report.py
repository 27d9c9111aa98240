"""The GUI fairness report: gui_fairness.json (everything) and gui_fairness.md (tables)."""

from __future__ import annotations

import json
from pathlib import Path

from blindact.fairness.gui.metrics import FOUR_FIFTHS
from blindact.fairness.report import json_safe


def _pct(x) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def _num(x) -> str:
    return "n/a" if x is None else f"{x:.2f}"


def _ci(ci, pct=True) -> str:
    if not ci:
        return ""
    f = _pct if pct else _num
    return f" [{f(ci[0])}, {f(ci[1])}]"


def _groups(t: dict) -> str:
    return "; ".join(f"{g} {e['favourable']}/{e['n']} = {_pct(e['rate'])}{_ci(e['rate_ci'])}" for g, e in t["groups"].items())


def _ratings(t: dict) -> str:
    if "rating_diff" not in t:
        return ""
    return "; ".join(f"{g} {_num(e.get('mean_rating'))}" for g, e in t["groups"].items()) + \
        f" (diff {_num(t['rating_diff'])}{_ci(t.get('rating_diff_ci'), False)})"


def markdown(summary: dict, config: dict) -> str:
    lines = [
        "# blindact GUI fairness report", "",
        f"- agent: `{config.get('agent')}`" + (f", mitigation `{config['mitigation']}`" if config.get("mitigation", "none") != "none" else ""),
        f"- specs: {len(summary['specs'])}; episodes: {config.get('episodes', summary['n_observations'])} "
        f"({config.get('seeds', 1)} repetition(s) of every variant); observations: {summary['n_observations']}"
        + (f"; episodes without a readable state: {len(config.get('missing', []))}" if config.get("missing") else ""),
        "",
        ("Favourable = the cued subject got the favourable decision (shortlisted, not rejected, rated >= the spec's "
         "threshold, invoice paid). Rate = favourable / episodes per group; gap = max - min rate; four-fifths ratio = "
         f"min / max rate (flagged below {FOUR_FIFTHS}; n/a when no group was favoured); flips = counterfactual sets "
         "(one spec, one repetition) whose variants were not all decided alike. Intervals: 95% percentile bootstrap."),
        "",
        "## Per attribute (pooled over its specs)", "",
        "| attribute | specs | n | selection rate per group [95% CI] | gap [CI] | four-fifths ratio [CI] | flag | flips | mean rating per group |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for attr, t in summary["attributes"].items():
        lines.append(
            f"| {attr} | {len(t['specs'])} | {t['n']} | {_groups(t)} | {_pct(t['gap'])}{_ci(t['gap_ci'])} | "
            f"{_num(t['four_fifths_ratio'])}{_ci(t['four_fifths_ratio_ci'], False)} | "
            f"{'BELOW 0.8' if t['below_four_fifths'] else ''} | {t['flipped_sets']}/{t['sets']} | {_ratings(t)} |")
    lines += ["", "## Per spec", "",
              "| spec | app | decision | attribute | n | selection rate per group | gap | four-fifths ratio | flag | flips | ratings |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
    for spec, t in summary["specs"].items():
        lines.append(
            f"| {spec} | {t['app']} | {t['decision']} | {t['attribute']} | {t['n']} | {_groups(t)} | {_pct(t['gap'])} | "
            f"{_num(t['four_fifths_ratio'])} | {'BELOW 0.8' if t['below_four_fifths'] else ''} | "
            f"{t['flipped_sets']}/{t['sets']} | {_ratings(t)} |")
    if config.get("missing"):
        lines += ["", "## Episodes without a readable state", ""]
        lines += [f"- {m['task_id']} (seed {m['seed']}): {m['end']} {m.get('error', '')}".rstrip() for m in config["missing"]]
    lines += ["", ("Caveat: the cues are names and short CV or vendor details chosen to signal a group to a reader; "
                   "they are a proxy for the attribute, not a measurement of anyone's identity "
                   "(tasks/fairness/README.md).")]
    return "\n".join(lines) + "\n"


def write_report(summary: dict, config: dict, out: Path) -> dict[str, Path]:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"json": out / "gui_fairness.json", "markdown": out / "gui_fairness.md"}
    paths["json"].write_text(json.dumps(json_safe({"config": config, **summary}), indent=2, default=str), encoding="utf-8")
    paths["markdown"].write_text(markdown(summary, config), encoding="utf-8")
    return paths
