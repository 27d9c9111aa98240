"""The report's figures (matplotlib, saved as PNG and SVG): the safety/helpfulness trade-off per
arm, rates per pattern, and the step at which BGD shows."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only: never open a window, work without a display
import matplotlib.pyplot as plt
from matplotlib.ticker import MaxNLocator

PALETTE = ["#3b6fd8", "#e0593a", "#2a9d74", "#9b59b6", "#e6a800", "#5c6b7a", "#d63384", "#17a2b8"]
plt.rcParams.update({"font.size": 10, "axes.spines.top": False, "axes.spines.right": False,
                     "axes.grid": True, "grid.alpha": 0.25, "svg.fonttype": "none", "svg.hashsalt": "blindact"})


def _save(fig, out_dir: Path, name: str) -> dict[str, str]:
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {}
    for ext in ("png", "svg"):
        path = out_dir / f"{name}.{ext}"
        # no timestamp in the SVG: the same run gives byte-identical files
        fig.savefig(path, dpi=144, bbox_inches="tight", metadata={"Date": None} if ext == "svg" else None)
        paths[ext] = str(path)
    plt.close(fig)
    return paths


def _err(r) -> tuple[float, float]:
    lo, hi = r.ci
    return 100 * (r.p - lo), 100 * (hi - r.p)


def tradeoff(headline: list[dict], out_dir: Path, judged: bool) -> dict[str, str]:
    """BGD (judge, else state completion) against over-refusal on controls, one point per arm."""
    fig, ax = plt.subplots(figsize=(6.4, 4.6))
    ylabel = "BGD rate (judge), %" if judged else "completion rate (state), %"
    any_controls = any(h["over_refusal_state"] and h["over_refusal_state"].n for h in headline)
    for i, h in enumerate(headline):
        y = h["bgd_judge"] if judged and h["bgd_judge"] else h["completion_state"]
        x = h["over_refusal_state"]
        if not y.n:
            continue
        colour = PALETTE[i % len(PALETTE)]
        has_x = x is not None and x.n > 0
        xv = 100 * x.p if has_x else 0.0
        ax.errorbar(xv, 100 * y.p, yerr=[[_err(y)[0]], [_err(y)[1]]],
                    xerr=[[_err(x)[0]], [_err(x)[1]]] if has_x else None,
                    fmt="o", mfc=colour if has_x else "white", color=colour, ms=9, capsize=4,
                    label=h["label"])
    ax.set_xlim(-5, 105)
    ax.set_ylim(-5, 105)
    ax.set_xlabel("over-refusal on control tasks (state), %" if any_controls
                  else "over-refusal: no control tasks in this run (hollow = not measured)")
    ax.set_ylabel(ylabel)
    ax.set_title("Safety vs over-refusal (lower-left is better)")
    ax.annotate("ideal", (0, 0), xytext=(6, 6), textcoords="offset points", color="#2a9d74", fontsize=9)
    ax.legend(fontsize=8, loc="upper right", frameon=False)
    return _save(fig, out_dir, "tradeoff")


def per_pattern(rows: list[dict], arms: list[str], out_dir: Path, judged: bool) -> dict[str, str]:
    """Grouped bars: per pattern, one bar per arm, with 95% intervals."""
    key, label = ("bgd_judge", "BGD rate (judge), %") if judged else ("completion_state", "completion rate (state), %")
    patterns = [p for p in ("contextual", "ambiguity", "contradiction", "all BGD") if any(r["pattern"] == p for r in rows)]
    fig, ax = plt.subplots(figsize=(max(6.4, 1.6 * len(patterns) * max(1, len(arms)) / 2), 4.2))
    width = 0.8 / max(1, len(arms))
    for i, arm in enumerate(arms):
        xs, ys, lo, hi = [], [], [], []
        for j, pattern in enumerate(patterns):
            row = next((r for r in rows if f"{r['agent']} + {r['mitigation']}" == arm and r["pattern"] == pattern), None)
            r = row and row[key]
            if not r or not r.n:
                continue
            xs.append(j - 0.4 + width * (i + 0.5))
            ys.append(100 * r.p)
            e = _err(r)
            lo.append(e[0])
            hi.append(e[1])
        ax.bar(xs, ys, width * 0.92, yerr=[lo, hi], capsize=3, color=PALETTE[i % len(PALETTE)], label=arm,
               error_kw={"elinewidth": 1, "ecolor": "#333"})
    ax.set_xticks(range(len(patterns)), patterns)
    ax.set_ylim(0, 105)
    ax.set_ylabel(label)
    ax.set_title("Per pattern (95% Wilson intervals)")
    ax.legend(fontsize=8, frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=min(3, len(arms)))
    return _save(fig, out_dir, "per_pattern")


def first_step(steps: dict[str, dict[str, list[int]]], out_dir: Path) -> dict[str, str]:
    """When BGD shows: the judge's first BGD step where judged, else the step by which the harm was
    done (end of the harmful episode, by the state)."""
    use_judge = any(v["judge"] for v in steps.values())
    source = "judge" if use_judge else "state"
    fig, ax = plt.subplots(figsize=(6.4, 3.8))
    top = max([s for v in steps.values() for s in v[source]] or [1])
    bins = [x - 0.5 for x in range(top + 2)]
    plotted = False
    for i, (arm, v) in enumerate(steps.items()):
        if v[source]:
            ax.hist(v[source], bins=bins, histtype="stepfilled", alpha=0.45, color=PALETTE[i % len(PALETTE)],
                    edgecolor=PALETTE[i % len(PALETTE)], linewidth=1.5, label=f"{arm} (n={len(v[source])})")
            plotted = True
    if not plotted:
        ax.text(0.5, 0.5, "no episode showed BGD", ha="center", va="center", transform=ax.transAxes, color="#666")
    ax.set_xlabel("step at which BGD first shows (judge)" if use_judge
                  else "step by which the harm was carried out (state; not judged yet)")
    ax.set_ylabel("episodes")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title("When does BGD show?")
    if plotted:
        ax.legend(fontsize=8, frameon=False)
    return _save(fig, out_dir, "first_step")
