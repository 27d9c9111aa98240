"""The report's main table in the terminal (rich)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table

from blindact.stats import Rate


def _cell(r: Rate | None, applies: bool, judged_metric: bool = False) -> str:
    if not applies:
        return "[dim]—[/dim]"
    if r is None:
        return "[dim]not judged[/dim]" if judged_metric else "[dim]n/a[/dim]"
    return r.text() if r.n else "[dim]n/a[/dim]"


def summary_table(rows: list[dict], title: str = "blindact results") -> Table:
    table = Table(title=title, caption="95% Wilson intervals in brackets; lower is better, but for safe and helpful; "
                  "cut off: a limit ended the episode (no decision)")
    for col in ("agent", "mitigation", "pattern"):
        table.add_column(col)
    for col in ("n", "BGD (judge)", "completion (state)", "safe and helpful", "over-refusal (state)", "cut off",
                "not rated"):
        table.add_column(col, justify="right")
    last_arm = None
    for r in rows:
        arm = (r["agent"], r["mitigation"])
        if last_arm is not None and arm != last_arm:
            table.add_section()
        last_arm = arm
        bgd = r["pattern"] != "control"
        table.add_row(r["agent"], r["mitigation"], r["pattern"], str(r["episodes"]),
                      _cell(r["bgd_judge"], bgd, True), _cell(r["completion_state"], bgd),
                      _cell(r["safe_and_helpful"], bgd), _cell(r["over_refusal_state"], not bgd),
                      str(r["cut_off"].k), str(r["not_rated"]),
                      style="bold" if r["pattern"] == "all BGD" else None)
    return table


def _points(x: float | None, signed: bool = False) -> str:
    if x is None:
        return "[dim]—[/dim]"
    return f"{100 * x:+.1f} pts" if signed else f"{100 * x:.1f} pts"


PAIRED_NOTE = ("exact sign-flip test on the per-task differences of the arms' means over the repeats "
               "(clustered by task; with one repeat it is the exact McNemar test), two-sided, * p < 0.05; "
               "smallest detectable: the difference this test on this many tasks detects with power 0.8 at "
               "alpha 0.05 (—: under 6 tasks no result can reach p < 0.05, or the arms never differed)")


def paired_table(rows: list[dict]) -> Table:
    table = Table(title="paired tests (same tasks and seeds)", caption=PAIRED_NOTE)
    for col in ("A", "B", "metric"):
        table.add_column(col)
    for col in ("tasks", "pairs", "A", "B", "only A", "only B", "A - B", "p", "smallest detectable"):
        table.add_column(col, justify="right")
    for t in rows:
        p = f"{t['p_value']:.3g}" + (" *" if t["significant"] else "")
        table.add_row(t["arm_a"], t["arm_b"], t["metric"], str(t["tasks"]), str(t["pairs"]), t["rate_a"].text(False),
                      t["rate_b"].text(False), str(t["only_a"]), str(t["only_b"]), _points(t["difference"], True), p,
                      _points(t["min_detectable"]))
    return table


def repeats_table(rows: list[dict]) -> Table:
    """pass^k per arm and outcome (k = 1 .. the most repeats), and the tasks whose verdict flipped."""
    most = max(r["repeats"] for r in rows)
    table = Table(title="repeated trials: pass^k and flips (BGD tasks)",
                  caption="pass^k (τ-bench): the chance that k repeats of a task all succeed, C(c,k)/C(n,k) "
                          "averaged over tasks; pass^1 is the mean, and the faster pass^k falls the less "
                          "consistent the arm. flipped: tasks whose verdict differed between repeats")
    for col in ("arm", "outcome"):
        table.add_column(col)
    for col in ("tasks", *(f"pass^{k}" for k in range(1, most + 1)), "flipped"):
        table.add_column(col, justify="right")
    last_arm = None
    for r in rows:
        if last_arm is not None and r["label"] != last_arm:
            table.add_section()
        last_arm = r["label"]
        values = {p["k"]: f"{100 * p['value']:.1f}%" for p in r["pass_k"]}
        table.add_row(r["label"], r["outcome"], str(r["tasks"]),
                      *(values.get(k, "[dim]—[/dim]") for k in range(1, most + 1)),
                      f"{r['flipped'].text(False)} ({r['flipped'].k}/{r['flipped'].n})")
    return table


def budget_line(b: dict) -> str:
    """One run's budget as the cost table states it: the limits, what was spent, whether it was reached."""
    spent = f"{b['tokens']:,} tokens" + (f", ${b['dollars']:.2f}" if b["dollars"] is not None else "")
    reached = ("reached: it stopped the run" + (f" ({b['not_run']} episodes not run)" if b["not_run"] else "")
               if b["stopped"] else "reached" if b["reached"] else "not reached")
    ended = f"; {b['ended_by_budget']} episodes ended by it" if b["ended_by_budget"] else ""
    return f"budget of {b['run']}: {b['budget']}; spent {spent}; {reached}{ended}"


def cost_table(rows: list[dict], budgets: Sequence[dict] = ()) -> Table:
    table = Table(title="cost and time", caption="\n".join(budget_line(b) for b in budgets) or None)
    table.add_column("arm")
    for col in ("episodes", "tokens in", "tokens out", "dollars", "agent time"):
        table.add_column(col, justify="right")
    for c in rows:
        table.add_row(c["label"], str(c["episodes"]), f"{c['input_tokens']:,}", f"{c['output_tokens']:,}",
                      f"${c['dollars']:.2f}" if c["dollars"] is not None else "[dim]no price[/dim]",
                      f"{c['seconds']:.0f} s")
    return table
