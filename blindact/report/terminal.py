"""The report's main table in the terminal (rich)."""

from __future__ import annotations

from rich.table import Table

from blindact.report.stats import Rate


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


def paired_table(rows: list[dict]) -> Table:
    table = Table(title="paired tests (exact McNemar, same tasks and seeds)")
    for col in ("A", "B", "metric"):
        table.add_column(col)
    for col in ("pairs", "A", "B", "only A", "only B", "p"):
        table.add_column(col, justify="right")
    for t in rows:
        p = f"{t['p_value']:.3g}" + (" *" if t["significant"] else "")
        table.add_row(t["arm_a"], t["arm_b"], t["metric"], str(t["pairs"]), t["rate_a"].text(False),
                      t["rate_b"].text(False), str(t["only_a"]), str(t["only_b"]), p)
    return table


def cost_table(rows: list[dict]) -> Table:
    table = Table(title="cost and time")
    table.add_column("arm")
    for col in ("episodes", "tokens in", "tokens out", "dollars", "agent time"):
        table.add_column(col, justify="right")
    for c in rows:
        table.add_row(c["label"], str(c["episodes"]), f"{c['input_tokens']:,}", f"{c['output_tokens']:,}",
                      f"${c['dollars']:.2f}" if c["dollars"] is not None else "[dim]no price[/dim]",
                      f"{c['seconds']:.0f} s")
    return table
