"""The report's numbers, computed from a Dataset: rates per agent x mitigation x pattern, paired
tests between arms, judge-vs-state agreement, cost and time."""

from __future__ import annotations

import fnmatch
import json
from itertools import combinations
from pathlib import Path

from blindact.report.data import BGD_PATTERNS, Dataset
from blindact.report.stats import Rate, cohen_kappa, mcnemar_exact, rate

ALL_BGD = "all BGD"


def arm_label(agent: str, mitigation: str) -> str:
    return f"{agent} + {mitigation}"


def _select(data: Dataset, agent: str, mitigation: str, pattern: str | None = None) -> list[dict]:
    out = [e for e in data.episodes if e["agent"] == agent and e["mitigation"] == mitigation]
    if pattern == ALL_BGD:
        return [e for e in out if e["is_bgd"]]
    if pattern is not None:
        return [e for e in out if e["pattern"] == pattern]
    return out


def summary(data: Dataset) -> list[dict]:
    """One row per arm x pattern (the three BGD patterns, their pool, and control when present).
    Rates with None where the metric does not apply or was not judged."""
    patterns = [p for p in BGD_PATTERNS if any(e["pattern"] == p for e in data.episodes)]
    rows = []
    for agent, mitigation in data.arms:
        wanted = patterns + ([ALL_BGD] if len(patterns) > 1 else [])
        if data.has_controls:
            wanted.append("control")
        for pattern in wanted:
            eps = _select(data, agent, mitigation, pattern)
            if not eps:
                continue
            bgd = pattern != "control"
            judged = [e for e in eps if e["judged"]]
            rows.append({
                "agent": agent, "mitigation": mitigation, "pattern": pattern,
                "episodes": len(eps), "rated": sum(e["valid"] for e in eps),
                "not_rated": sum(not e["valid"] for e in eps), "judged": len(judged),
                "bgd_judge": rate(e["judge_bgd"] for e in eps) if bgd and judged else None,
                "completion_state": rate(e["completion"] for e in eps) if bgd else None,
                "completion_judge": rate(e["judge_completion"] for e in eps) if bgd and judged else None,
                "over_refusal_state": rate(e["state_over_refusal"] for e in eps) if not bgd else None,
                "over_refusal_judge": rate(e["judge_over_refusal"] for e in eps) if not bgd and judged else None,
                "control_success": rate(e["control_success"] for e in eps) if not bgd else None,
                "safe_and_helpful": rate(e["safe_and_helpful"] for e in eps) if bgd else None,
                "declined": rate(e["declined"] for e in eps),
                "cut_off": rate(e["cut_off"] for e in eps),
            })
    return rows


def headline(data: Dataset) -> list[dict]:
    """Per arm: BGD (judge), completion (state) and safe-and-helpful (state) over all BGD tasks,
    over-refusal (state) on controls."""
    out = []
    for agent, mitigation in data.arms:
        eps = _select(data, agent, mitigation)
        bgd = [e for e in eps if e["is_bgd"]]
        ctl = [e for e in eps if not e["is_bgd"]]
        out.append({
            "agent": agent, "mitigation": mitigation, "label": arm_label(agent, mitigation),
            "episodes": len(eps),
            "bgd_judge": rate(e["judge_bgd"] for e in bgd) if any(e["judged"] for e in bgd) else None,
            "completion_state": rate(e["completion"] for e in bgd),
            "safe_and_helpful": rate(e["safe_and_helpful"] for e in bgd),
            "over_refusal_state": rate(e["state_over_refusal"] for e in ctl) if ctl else None,
            "over_refusal_judge": (rate(e["judge_over_refusal"] for e in ctl)
                                   if any(e["judged"] for e in ctl) else None),
        })
    return out


# (episode field, label, on BGD tasks (else on controls))
PAIRED_METRICS = (
    ("completion", "completion (state)", True),
    ("safe_and_helpful", "safe and helpful (state)", True),
    ("judge_bgd", "BGD (judge)", True),
    ("state_over_refusal", "over-refusal (state)", False),
)


def paired_tests(data: Dataset) -> list[dict]:
    """McNemar's exact test for every two arms that differ in one factor (same agent, other
    mitigation; or same mitigation, other agent), on the episodes both ran: same task and seed."""
    rows = []
    for (a1, m1), (a2, m2) in combinations(data.arms, 2):
        if a1 != a2 and m1 != m2:
            continue
        for field, label, on_bgd in PAIRED_METRICS:
            first = {(e["task_id"], e["seed"]): e[field] for e in _select(data, a1, m1) if e["is_bgd"] == on_bgd}
            second = {(e["task_id"], e["seed"]): e[field] for e in _select(data, a2, m2) if e["is_bgd"] == on_bgd}
            pairs = [(first[k], second[k]) for k in sorted(first.keys() & second.keys())
                     if first[k] is not None and second[k] is not None]
            if not pairs:
                continue
            b = sum(1 for x, y in pairs if x and not y)
            c = sum(1 for x, y in pairs if y and not x)
            p = mcnemar_exact(b, c)
            rows.append({
                "arm_a": arm_label(a1, m1), "arm_b": arm_label(a2, m2), "metric": label, "pairs": len(pairs),
                "rate_a": Rate(sum(bool(x) for x, _ in pairs), len(pairs)),
                "rate_b": Rate(sum(bool(y) for _, y in pairs), len(pairs)),
                "only_a": b, "only_b": c, "p_value": p, "significant": p < 0.05,
            })
    return rows


def agreement(data: Dataset) -> list[dict]:
    """Judge vs desktop state, per arm and over all: completion on BGD tasks, over-refusal on controls."""
    rows = []
    groups = [(arm_label(a, m), _select(data, a, m)) for a, m in data.arms] + [("all", data.episodes)]
    for label, eps in groups:
        for name, judge_key, state_key in (("completion", "judge_completion", "completion"),
                                           ("over-refusal", "judge_over_refusal", "state_over_refusal")):
            pairs = [(bool(e[judge_key]), bool(e[state_key])) for e in eps
                     if e[judge_key] is not None and e[state_key] is not None]
            if not pairs:
                continue
            agree = sum(a == b for a, b in pairs)
            rows.append({"group": label, "metric": name, "pairs": len(pairs), "agree": agree,
                         "agreement": Rate(agree, len(pairs)), "kappa": cohen_kappa(pairs),
                         "judge_only": sum(a and not b for a, b in pairs),
                         "state_only": sum(b and not a for a, b in pairs)})
    return rows


# ------------------------------------------------------------------------------------ cost


def load_prices(path: str | Path | None) -> dict[str, dict[str, float]]:
    """Prices per million tokens, {"<agent spec or glob>": {"input": 3.0, "output": 15.0}}, from a
    JSON or YAML file."""
    if not path:
        return {}
    path = Path(path)
    text = path.read_text()
    if path.suffix in (".yaml", ".yml"):
        import yaml

        prices = yaml.safe_load(text)
    else:
        prices = json.loads(text)
    if not isinstance(prices, dict):
        raise ValueError(f"{path}: prices must map an agent spec (or glob) to {{input, output}} per 1M tokens")
    for key, value in prices.items():
        if not isinstance(value, dict) or not {"input", "output"} <= set(value):
            raise ValueError(f"{path}: price for {key!r} needs 'input' and 'output' (dollars per 1M tokens)")
    return prices


def price_for(agent: str, prices: dict) -> dict | None:
    model = agent.split(":", 1)[-1].split("@", 1)[0]
    for pattern, value in prices.items():
        if fnmatch.fnmatchcase(agent, pattern) or fnmatch.fnmatchcase(model, pattern):
            return value
    return None


def cost(data: Dataset, prices: dict | None = None) -> list[dict]:
    rows = []
    for agent, mitigation in data.arms:
        eps = _select(data, agent, mitigation)
        tin = sum(e["input_tokens"] for e in eps)
        tout = sum(e["output_tokens"] for e in eps)
        price = price_for(agent, prices or {})
        seconds = sum(e["seconds"] or 0.0 for e in eps)
        rows.append({
            "agent": agent, "mitigation": mitigation, "label": arm_label(agent, mitigation), "episodes": len(eps),
            "steps": sum(e["steps"] for e in eps), "input_tokens": tin, "output_tokens": tout,
            "dollars": (tin * price["input"] + tout * price["output"]) / 1e6 if price else None,
            "seconds": seconds, "seconds_per_episode": seconds / len(eps) if eps else None,
            "not_rated": sum(not e["valid"] for e in eps),
        })
    return rows


def first_steps(data: Dataset) -> dict[str, dict[str, list[int]]]:
    """Per arm: the step at which the judge saw BGD first, and (state) the step at which episodes
    that carried out the harm ended, i.e. the harm was done by then."""
    out = {}
    for agent, mitigation in data.arms:
        eps = [e for e in _select(data, agent, mitigation) if e["is_bgd"] and e["valid"]]
        out[arm_label(agent, mitigation)] = {
            "judge": [e["first_bgd_step"] for e in eps if e["judge_bgd"] and e["first_bgd_step"] is not None],
            "state": [e["steps"] for e in eps if e["completion"]],
        }
    return out
