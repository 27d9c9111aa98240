"""Repeated trials in the report: τ-bench's pass^k, the tasks whose verdict flips, and paired tests that
count a task once however often it was repeated, each checked against values worked out by hand from
a store built here (two mitigations, four tasks, three repeats, one repeat broken by the desktop)."""

from __future__ import annotations

import csv
import json
import math
from fractions import Fraction
from pathlib import Path

import pytest
from rich.console import Console

from blindact.endings import End
from blindact.report.build import build_report
from blindact.stats import min_detectable_difference, pass_hat_k, sign_flip_test
from blindact.report.terminal import paired_table, repeats_table
from blindact.run.episode import EpisodeResult, EpisodeSpec
from blindact.run.store import Store
from blindact.run.suite import SuiteOptions
from blindact.tasks import get_task

AGENT = "api:model-x"
TASKS = ["rep-0", "rep-1", "rep-2", "rep-3"]
# harm carried out, per task, in seeds 0, 1, 2 (None: the desktop broke, not rated)
HARM = {"none": [[1, 1, 1], [1, 0, 1], [0, 0, 0], [1, 1, 0]],
        "reflective": [[0, 1, 0], [0, 0, 0], [0, 0, 0], [0, 0, None]]}
# no harm, but the legitimate part left undone: not safe and helpful
UNDONE = {("none", "rep-2", 1)}


def _spec(task_id: str, mitigation: str, seed: int) -> EpisodeSpec:
    task = get_task("pilot-contextual-threat-comment").model_copy(update={"id": task_id})
    return EpisodeSpec(task, AGENT, mitigation, seed)


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("repeats") / "run"
    specs = [_spec(t, m, s) for m in HARM for t in TASKS for s in range(3)]
    with Store(run_dir) as store:
        store.begin_run(SuiteOptions().config(specs), {s.task_id: s.task for s in specs}.values())
        for m, rows in HARM.items():
            for task, harms in zip(TASKS, rows):
                for seed, harm in enumerate(harms):
                    spec = _spec(task, m, seed)
                    if harm is None:
                        result = EpisodeResult(End.DESKTOP_ERROR, 0, {"harm": None, "benign": None}, error="Xvfb died")
                    else:
                        benign = not harm and (m, task, seed) not in UNDONE
                        result = EpisodeResult(End("done"), 3, {"harm": bool(harm), "benign": benign}, seconds=1.0)
                    store.record_episode(spec, result)
        store.end_run("finished")
    return build_report([run_dir], run_dir / "report")


def _rows(report, outcome: str) -> dict[str, dict]:
    return {r["mitigation"]: r for r in report.figures["repeats"] if r["outcome"] == outcome}


def test_pass_hat_k_of_one_task():
    assert pass_hat_k(3, 2, 1) == pytest.approx(2 / 3)
    assert pass_hat_k(3, 2, 2) == pytest.approx(1 / 3)  # C(2,2) / C(3,2)
    assert pass_hat_k(3, 2, 3) == 0.0
    assert pass_hat_k(5, 5, 4) == 1.0
    assert pass_hat_k(10, 7, 3) == pytest.approx(35 / 120)  # C(7,3) / C(10,3)
    with pytest.raises(ValueError, match="n=2, c=1, k=3"):
        pass_hat_k(2, 1, 3)


def test_pass_k_and_flips_by_hand(report):
    no_harm = _rows(report, "no harm")
    # arm none, successes of 3 repeats per task: 0, 1, 3, 1
    none = no_harm["none"]
    assert (none["tasks"], none["repeats"]) == (4, 3)
    assert [p["k"] for p in none["pass_k"]] == [1, 2, 3]
    assert none["pass_k"][0]["value"] == pytest.approx(5 / 12)
    assert none["pass_k"][1]["value"] == pytest.approx((0 + 0 + 1 + 0) / 4)
    assert none["pass_k"][2]["value"] == pytest.approx(1 / 4)
    assert (none["flipped"].k, none["flipped"].n) == (2, 4)  # rep-1 and rep-3
    # arm reflective: (successes, rated repeats) 2/3, 3/3, 3/3, 2/2 (one repeat broke)
    refl = no_harm["reflective"]
    assert refl["pass_k"][0]["value"] == pytest.approx((2 / 3 + 1 + 1 + 1) / 4)
    assert refl["pass_k"][1]["value"] == pytest.approx((1 / 3 + 1 + 1 + 1) / 4)
    assert (refl["pass_k"][2]["value"], refl["pass_k"][2]["tasks"]) == (pytest.approx(2 / 3), 3)  # rep-3 has 2 only
    assert (refl["flipped"].k, refl["flipped"].n) == (1, 4)
    # safe and helpful, arm none: rep-2's second repeat left the legitimate part undone: 0, 1, 2, 1
    sah = _rows(report, "safe and helpful")["none"]
    assert [p["value"] for p in sah["pass_k"]] == pytest.approx([4 / 12, (1 / 3) / 4, 0.0])
    assert (sah["flipped"].k, sah["flipped"].n) == (3, 4)
    assert _rows(report, "safe and helpful")["reflective"]["pass_k"][0]["value"] == pytest.approx(11 / 12)


def test_the_paired_test_counts_each_task_once(report):
    t = next(r for r in report.figures["paired"] if r["metric"] == "completion (state)")
    # pairs: every (task, seed) both arms rated: 12 - rep-3's third
    assert (t["tasks"], t["pairs"], t["only_a"], t["only_b"]) == (4, 11, 6, 0)
    # per-task differences of the harm rates: 1 - 1/3, 2/3 - 0, 0 - 0, 1 - 0
    diffs = [2 / 3, 2 / 3, 0.0, 1.0]
    assert t["difference"] == pytest.approx(sum(diffs) / 4)
    # signs of the three non-zero differences (2, 2, 3 thirds) flipped every way: |sum| >= 7 in 2 of 8
    assert t["p_value"] == pytest.approx(2 / 8)
    # 11 episode pairs taken as independent would have made it look significant: McNemar on 6 vs 0
    assert 2 / 2 ** 6 < 0.05 < t["p_value"]
    # four tasks: even all four differing one way gives p = 2/16, so no difference is detectable
    assert t["min_detectable"] is None


def test_sign_flip_test_by_enumeration():
    # 1/3, 2/3, -1/3, 1 on the common denominator: 1, 2, -1, 3, sum 5; |sum| >= 5 in 6 of the 16 sign choices
    assert sign_flip_test([Fraction(1, 3), Fraction(2, 3), Fraction(-1, 3), Fraction(1)]) == pytest.approx(6 / 16)
    assert sign_flip_test([Fraction(0)] * 4) == 1.0
    assert sign_flip_test([]) == 1.0


def test_min_detectable_difference_by_hand():
    # eight tasks, differences 1/2, 0, 1, 1/2, -1/2, 1, 0, 1/3: the sign-flip test's spread sqrt(mean d^2)
    diffs = [0.5, 0.0, 1.0, 0.5, -0.5, 1.0, 0.0, 1 / 3]
    mean_square = (0.25 + 0 + 1 + 0.25 + 0.25 + 1 + 0 + 1 / 9) / 8
    z = 1.959963984540054 + 0.8416212335729143  # z_0.975 + z_0.8
    assert min_detectable_difference(diffs) == pytest.approx(z * math.sqrt(mean_square) / math.sqrt(8))
    # one repeat per task: McNemar's power formula, (z + z) * sqrt(discordant share / tasks)
    mcnemar = [1.0] * 12 + [-1.0] * 3 + [0.0] * 25
    assert min_detectable_difference(mcnemar) == pytest.approx(z * math.sqrt(15 / 40 / 40))
    assert min_detectable_difference(diffs, power=0.9) > min_detectable_difference(diffs)
    # no result can be significant: five tasks (2/32 > 0.05), or arms that never differed
    assert min_detectable_difference([1.0] * 5) is None and min_detectable_difference([1.0] * 6) is not None
    assert min_detectable_difference([0.0] * 30) is None


def _text(table) -> str:
    console = Console(width=250, record=True)
    console.print(table)
    return console.export_text()


def test_the_text_tables_show_them(report):
    text = _text(repeats_table(report.figures["repeats"]))
    assert "pass^3" in text and "flipped" in text
    line = next(ln for ln in text.splitlines() if "+ none" in ln and "no harm" in ln)
    assert ["41.7%", "25.0%", "25.0%", "50.0%"] == [c for c in line.replace("│", " ").split() if c.endswith("%")]
    paired = _text(paired_table(report.figures["paired"]))
    line = next(ln for ln in paired.splitlines() if "completion (state)" in ln)
    assert "+58.3 pts" in line and "0.25" in line and line.rstrip(" │").endswith("—")


def test_html_and_exports_show_them(report):
    html = report.index.read_text()
    assert "Repeated trials: consistency" in html and "pass^3" in html
    assert "41.7%" in html and "91.7%" in html and "+58.3 pts" in html and "no result can reach p &lt; 0.05" in html
    with open(report.out_dir / "repeats.csv") as fh:
        rows = {(r["mitigation"], r["outcome"]): r for r in csv.DictReader(fh)}
    assert float(rows[("none", "no harm")]["pass^2"]) == pytest.approx(0.25)
    assert rows[("none", "no harm")]["flipped_k"] == "2" and rows[("none", "no harm")]["flipped_n"] == "4"
    doc = json.loads((report.out_dir / "report.json").read_text())
    assert len(doc["repeats"]) == 4 and doc["repeats"][0]["pass_k"][0]["k"] == 1


def test_one_repeat_has_no_repeats_table(tmp_path):
    run_dir = tmp_path / "once"
    specs = [_spec(t, "none", 0) for t in TASKS]
    with Store(run_dir) as store:
        store.begin_run(SuiteOptions().config(specs), [s.task for s in specs])
        for spec, harm in zip(specs, (1, 0, 0, 1)):
            store.record_episode(spec, EpisodeResult(End("done"), 2, {"harm": bool(harm), "benign": not harm}))
    report = build_report([run_dir], tmp_path / "out")
    assert report.figures["repeats"] == []
    assert "--repeats 3" in report.index.read_text()
    assert Path(tmp_path / "out" / "repeats.csv").read_text() == "\n"


def test_a_run_of_seven_tasks_gets_a_smallest_detectable_difference(tmp_path):
    # one repeat: per-task differences 1, 1, 1, 1, 0, 0, -1 (McNemar: 4 only in A, 1 only in B)
    run_dir = tmp_path / "seven"
    harm = {"none": (1, 1, 1, 1, 1, 0, 0), "reflective": (0, 0, 0, 0, 1, 0, 1)}
    tasks = [f"rep-{i}" for i in range(7)]
    specs = [_spec(t, m, 0) for m in harm for t in tasks]
    with Store(run_dir) as store:
        store.begin_run(SuiteOptions().config(specs), {s.task_id: s.task for s in specs}.values())
        for spec in specs:
            h = harm[spec.mitigation][tasks.index(spec.task_id)]
            store.record_episode(spec, EpisodeResult(End("done"), 2, {"harm": bool(h), "benign": not h}))
    report = build_report([run_dir], tmp_path / "out")
    t = next(r for r in report.figures["paired"] if r["metric"] == "completion (state)")
    assert (t["tasks"], t["only_a"], t["only_b"]) == (7, 4, 1)
    assert t["p_value"] == pytest.approx(2 * (1 + 5) / 2 ** 5)
    assert t["min_detectable"] == pytest.approx((1.959963984540054 + 0.8416212335729143) * math.sqrt(5 / 7 / 7))
    assert f"{100 * t['min_detectable']:.1f} pts" in report.index.read_text()
