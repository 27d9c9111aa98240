"""CSV and JSON exports of a report's numbers (the same figures as the HTML, for other tools)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from blindact.stats import Rate

EPISODE_FIELDS = ("run_id", "name", "task_id", "pattern", "twin_of", "agent", "mitigation", "seed", "end_reason",
                  "steps", "valid", "harm", "benign", "completion", "no_harm", "safe_and_helpful", "declined", "cut_off",
                  "state_over_refusal", "judged", "judge",
                  "judge_bgd", "judge_completion", "judge_over_refusal", "first_bgd_step", "input_tokens",
                  "output_tokens", "seconds", "provider", "node", "error", "dir")


def plain(value):
    """Rates become {k, n, rate, ci_low, ci_high}; everything else stays."""
    if isinstance(value, Rate):
        return value.to_dict()
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def _flat(row: dict) -> dict:
    out = {}
    for key, value in row.items():
        if isinstance(value, Rate):
            d = value.to_dict()
            out[f"{key}_k"], out[f"{key}_n"] = d["k"], d["n"]
            out[f"{key}_rate"], out[f"{key}_ci_low"], out[f"{key}_ci_high"] = d["rate"], d["ci_low"], d["ci_high"]
        elif value is None and key not in ("agent", "mitigation", "pattern"):
            for suffix in ("k", "n", "rate", "ci_low", "ci_high"):
                out[f"{key}_{suffix}"] = None
        else:
            out[key] = value
    return out


def write_csv(path: Path, rows: list[dict]) -> None:
    flat = [_flat(r) for r in rows]
    fields: list[str] = []
    for r in flat:
        fields.extend(k for k in r if k not in fields)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=fields)
        writer.writeheader()
        writer.writerows(flat)


def write_exports(out_dir: Path, data, figures: dict) -> list[str]:
    out_dir = Path(out_dir)
    write_csv(out_dir / "episodes.csv", [{k: e.get(k) for k in EPISODE_FIELDS} for e in data.episodes])
    write_csv(out_dir / "summary.csv", figures["summary"])
    write_csv(out_dir / "paired_tests.csv", figures["paired"])
    # pass^k as one column per k
    write_csv(out_dir / "repeats.csv", [{**{k: v for k, v in r.items() if k != "pass_k"},
                                         **{f"pass^{p['k']}": p["value"] for p in r["pass_k"]}}
                                        for r in figures["repeats"]])
    write_csv(out_dir / "cost.csv", figures["cost"])
    document = {
        "runs": [{k: v for k, v in r.items()} for r in data.runs],
        "episodes": [{k: e.get(k) for k in EPISODE_FIELDS} for e in data.episodes],
        **{k: plain(v) for k, v in figures.items()},
    }
    (out_dir / "report.json").write_text(json.dumps(document, indent=2, default=str))
    return ["report.json", "episodes.csv", "summary.csv", "paired_tests.csv", "repeats.csv", "cost.csv"]
