"""Agreement statistics against values worked out by hand and against scikit-learn, and the
agreement report of a judge with labels (per field, per pattern) and between labellers."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.metrics import (
    cohen_kappa_score,
    confusion_matrix,
    f1_score,
    precision_score,
    recall_score,
)

from blindact.judging.agreement import (
    judge_agreement,
    labeller_agreement,
    reference_labels,
)
from blindact.judging.labels import Label, LabelStore
from blindact.judging.verdict import Judgement
from blindact.stats import (
    accuracy,
    binary_agreement,
    cohen_kappa,
    confusion,
    fleiss_kappa,
    precision_recall_f1,
)
from blindact.stats import paired_bootstrap_ci as bootstrap_ci

# TP at 0,2,6,8,9; FN at 1; FP at 4; TN at 3,5,7
REF = [1, 1, 1, 0, 0, 0, 1, 0, 1, 1]
PRED = [1, 0, 1, 0, 1, 0, 1, 0, 1, 1]


def test_by_hand():
    assert confusion(REF, PRED).tolist() == [[3, 1], [1, 5]]
    assert accuracy(REF, PRED) == pytest.approx(0.8)
    # po = 0.8, pe = 0.6*0.6 + 0.4*0.4 = 0.52, kappa = 0.28 / 0.48
    assert cohen_kappa(REF, PRED) == pytest.approx(7 / 12)
    p, r, f1 = precision_recall_f1(REF, PRED)
    assert (p, r) == (pytest.approx(5 / 6), pytest.approx(5 / 6))
    assert f1 == pytest.approx(10 / 12)


def test_unbalanced_by_hand():
    ref = [1, 1, 1, 1, 0, 0]
    pred = [1, 1, 0, 0, 0, 1]
    # TP 2, FN 2, TN 1, FP 1: po = 3/6; pe = (4/6)(3/6) + (2/6)(3/6) = 1/2; kappa = 0
    assert cohen_kappa(ref, pred) == pytest.approx(0.0)
    assert precision_recall_f1(ref, pred) == (pytest.approx(2 / 3), pytest.approx(0.5), pytest.approx(4 / 7))


@pytest.mark.parametrize("seed", range(6))
def test_against_scikit_learn(seed):
    rng = np.random.default_rng(seed)
    ref = rng.random(40) < 0.55
    pred = np.where(rng.random(40) < 0.75, ref, ~ref)
    assert cohen_kappa(ref, pred) == pytest.approx(cohen_kappa_score(ref, pred))
    assert precision_recall_f1(ref, pred)[2] == pytest.approx(f1_score(ref, pred))
    assert precision_recall_f1(ref, pred)[0] == pytest.approx(precision_score(ref, pred))
    assert precision_recall_f1(ref, pred)[1] == pytest.approx(recall_score(ref, pred))
    assert confusion(ref, pred).tolist() == confusion_matrix(ref, pred, labels=[False, True]).tolist()


def test_undefined_statistics_are_nan_not_a_number_that_looks_measured():
    assert math.isnan(cohen_kappa([1, 1, 1], [1, 1, 1]))  # both raters use one class
    assert math.isnan(precision_recall_f1([0, 0], [0, 0])[2])  # no positives anywhere
    assert math.isnan(accuracy([], []))
    with pytest.raises(ValueError, match="equally long"):
        accuracy([1, 0], [1])


def test_fleiss_kappa_by_hand():
    # 3 items, 3 raters: P_i = 1, 1, 1/3 -> P = 7/9; p_j = 4/9, 5/9 -> Pe = 41/81; kappa = 22/40
    assert fleiss_kappa(np.array([[3, 0], [0, 3], [1, 2]])) == pytest.approx(0.55)
    # with two raters Fleiss' kappa is Scott's pi: [[2,0],[0,2],[1,1],[1,1]]: P = 1/2, Pe = 1/2 -> 0
    assert fleiss_kappa(np.array([[2, 0], [0, 2], [1, 1], [1, 1]])) == pytest.approx(0.0)
    with pytest.raises(ValueError, match="same number"):
        fleiss_kappa(np.array([[2, 0], [1, 2]]))


def test_bootstrap_interval_is_reproducible_and_brackets_the_estimate():
    lo, hi = bootstrap_ci(REF, PRED, accuracy, n_boot=1000, seed=3)
    assert (lo, hi) == bootstrap_ci(REF, PRED, accuracy, n_boot=1000, seed=3)
    assert 0.4 <= lo <= 0.8 <= hi <= 1.0
    assert bootstrap_ci([1, 0, 1, 0], [1, 0, 1, 0], accuracy, n_boot=200) == (1.0, 1.0)
    # a larger sample with the same agreement gives a narrower interval
    lo2, hi2 = bootstrap_ci(REF * 10, PRED * 10, accuracy, n_boot=1000, seed=3)
    assert hi2 - lo2 < hi - lo
    # a statistic undefined in most resamples gets no interval rather than one from the few defined ones
    assert all(math.isnan(x) for x in bootstrap_ci([1, 1, 1, 1], [1, 1, 1, 1], cohen_kappa, n_boot=200))


def test_binary_agreement_bundle():
    a = binary_agreement(REF, PRED, n_boot=500)
    d = a.to_dict()
    assert d["n"] == 10 and d["confusion"] == [[3, 1], [1, 5]]
    assert d["kappa"] == pytest.approx(7 / 12) and len(d["kappa_ci"]) == 2


# ------------------------------------------------------------------------------------------ reports
def _label(h, who, i, c, pattern="contextual", kind="human", o=None):
    return Label(trajectory_hash=h * 16, episode=f"ep-{h}", task_id="t", pattern=pattern, labeller=who, kind=kind,
                 bgd_intention=i, bgd_completion=c, over_refusal=o)


def _write_verdicts(run, rows):
    from blindact.judging.runs import save_judgements
    from blindact.run.store import Store
    from blindact.trajectory import Trajectory

    with Store(run) as store:  # the judged episodes must exist in the run's store
        for h, p, *_ in rows:
            store.record_trajectory(Trajectory(meta={"task_id": "t", "pattern": p}, result={"end": "done"}),
                                    name=f"ep-{h}")
    save_judgements(run, "openai_j", [
        Judgement(episode=f"ep-{h}", task_id="t", pattern=p, judge="openai:j", rubric_version="1",
                  trajectory_hash=h * 16, status=s, bgd_intention=i, bgd_completion=c) for h, p, s, i, c in rows])


def test_judge_agreement_per_field_and_pattern(tmp_path):
    store = LabelStore(tmp_path / "labels")
    truth = {"a": (True, True), "b": (True, False), "c": (False, False), "d": (True, True), "e": (False, False)}
    for h, (i, c) in truth.items():
        store.save(_label(h, "ana", i, c, pattern="contextual" if h in "abc" else "ambiguity"))
    _write_verdicts(tmp_path / "run", [
        ("a", "contextual", "judged", True, True),
        ("b", "contextual", "judged", True, True),  # wrong on completion
        ("c", "contextual", "judged", True, False),  # wrong on intention
        ("d", "ambiguity", "judged", True, True),
        ("e", "ambiguity", "unjudged", None, None),
        ("z", "ambiguity", "judged", False, False),  # no label
    ])
    rep = judge_agreement(tmp_path / "run", "openai_j", tmp_path / "labels", n_boot=200)
    assert rep["matched"] == 5 and rep["unjudged"] == 1 and rep["verdicts_without_label"] == 1
    assert rep["label_kinds"] == ["human"]
    intention = rep["fields"]["bgd_intention"]
    # the unjudged episode stays in n, is named, and counts as an error in accuracy_all
    assert intention["all"]["n"] == 5 and intention["all"]["n_decided"] == 4 and intention["all"]["unjudged"] == ["ep-e"]
    assert intention["all"]["accuracy"] == pytest.approx(0.75) and intention["all"]["accuracy_all"] == pytest.approx(0.6)
    assert intention["all"]["errors"] == {"false_bgd": ["ep-c"], "missed_bgd": []}
    assert rep["fields"]["bgd_completion"]["all"]["errors"] == {"false_bgd": ["ep-b"], "missed_bgd": []}
    assert intention["all"]["confusion"] == [[0, 1], [0, 3]]
    # the judge says yes to everything: po = 3/4 = pe (3/4 * 1 + 1/4 * 0), so kappa is 0, no better than chance
    assert intention["all"]["kappa"] == pytest.approx(0.0)
    completion = rep["fields"]["bgd_completion"]
    assert completion["contextual"]["confusion"] == [[1, 1], [0, 1]]
    assert completion["contextual"]["accuracy"] == pytest.approx(2 / 3)
    # po = 2/3; ref yes 1/3, judge yes 2/3: pe = (1/3)(2/3) + (2/3)(1/3) = 4/9; kappa = (2/9)/(5/9) = 0.4
    assert completion["contextual"]["kappa"] == pytest.approx(0.4)
    assert completion["ambiguity"]["n"] == 2 and completion["ambiguity"]["n_decided"] == 1


def test_gold_labels_need_agreement_or_adjudication():
    labels = [_label("a", "x", True, True), _label("a", "y", True, True),  # unanimous
              _label("b", "x", True, False), _label("b", "y", False, False), _label("b", "z", False, False),  # disputed
              _label("c", "x", True, False), _label("c", "y", False, False), _label("c", "boss", True, False, kind="adjudicated"),
              _label("d", "construction", True, False, kind="constructed")]
    ref, queue = reference_labels(labels)
    assert ref["a" * 16]["source"] == "unanimous" and ref["a" * 16]["bgd_completion"] is True
    assert "b" * 16 not in ref and [x.labeller for x in queue["b" * 16]] == ["x", "y", "z"]  # 2 to 1 is not gold
    assert ref["c" * 16]["source"] == "adjudicated" and ref["c" * 16]["bgd_intention"] is True
    assert ref["d" * 16]["source"] == "constructed"
    only_x, queue_x = reference_labels(labels, "x")
    assert only_x["b" * 16]["bgd_intention"] is True and only_x["b" * 16]["source"] == "single" and not queue_x


def test_judge_ties_stay_in_n_and_go_to_adjudication(tmp_path):
    from blindact.judging.runs import save_judgements
    from blindact.run.store import Store
    from blindact.trajectory import Trajectory

    store = LabelStore(tmp_path / "labels")
    for h in "abcd":
        store.save(_label(h, "ana", h in "ab", False))
    store.save(_label("e", "ana", True, False))
    store.save(_label("e", "bo", False, False))  # disputed: no gold yet
    rows = [("a", True, []), ("b", None, ["bgd_intention"]), ("c", None, ["bgd_intention"]), ("d", False, []), ("e", True, [])]
    with Store(tmp_path / "run") as s:
        for h, *_ in rows:
            s.record_trajectory(Trajectory(meta={"task_id": "t"}, result={"end": "done"}), name=f"ep-{h}")
    save_judgements(tmp_path / "run", "vote", [
        Judgement(episode=f"ep-{h}", task_id=f"t{h}", pattern="contextual", judge="vote(a,b)", rubric_version="1",
                  trajectory_hash=h * 16, status="judged", bgd_intention=i, bgd_completion=False, ties=t,
                  options="mode=blind;shots=4") for h, i, t in rows])
    rep = judge_agreement(tmp_path / "run", "vote", tmp_path / "labels", n_boot=100)
    intention = rep["fields"]["bgd_intention"]["all"]
    assert intention["n"] == 4 and intention["n_decided"] == 2 and intention["ties"] == ["ep-b", "ep-c"]
    assert intention["accuracy"] == 1.0 and intention["accuracy_all"] == 0.5
    assert rep["to_adjudicate"] == {"judge_ties": ["ep-b", "ep-c"], "label_disagreements": ["ep-e"]}
    assert rep["modes"] == ["blind"] and rep["matched"] == 4


def test_judge_vs_state_side_by_side(tmp_path):
    from blindact.judging.runs import save_judgements
    from blindact.run.store import Store
    from blindact.trajectory import Trajectory

    store = LabelStore(tmp_path / "labels")
    # reference completion / judge completion / state harm
    table = {"a": (True, True, True), "b": (False, False, True), "c": (False, True, False), "d": (False, False, False)}
    for h, (ref, _j, _s) in table.items():
        store.save(_label(h, "ana", ref or h == "c", ref))
    with Store(tmp_path / "run") as s:
        for h in table:
            s.record_trajectory(Trajectory(meta={"task_id": "t"}, result={"end": "done"}), name=f"ep-{h}")
    save_judgements(tmp_path / "run", "openai_j", [
        Judgement(episode=f"ep-{h}", task_id="t", pattern="contextual", judge="openai:j", rubric_version="1",
                  trajectory_hash=h * 16, status="judged", bgd_intention=j, bgd_completion=j, state_harm=st)
        for h, (_r, j, st) in table.items()])
    side = judge_agreement(tmp_path / "run", "openai_j", tmp_path / "labels", n_boot=50)["judge_vs_state"]
    m = side["bgd_completion"]["all"]
    assert m["n"] == 4
    assert m["judge_vs_reference"]["accuracy"] == 0.75 and m["judge_vs_state"]["accuracy"] == 0.5
    assert m["state_vs_reference"]["accuracy"] == 0.75
    # state vs judge: [[1 1] [1 1]] -> po .5, pe .5, kappa 0
    assert m["judge_vs_state"]["kappa"] == pytest.approx(0.0)


def test_bootstrap_by_task_is_wider_when_a_tasks_episodes_move_together():
    ref = [True, False] * 25
    tasks = [f"t{i // 5}" for i in range(50)]
    pred = [r if int(t[1:]) < 7 else not r for r, t in zip(ref, tasks)]  # 3 of 10 tasks wholly wrong
    lo_i, hi_i = bootstrap_ci(ref, pred, accuracy, n_boot=1000, seed=1)
    lo_t, hi_t = bootstrap_ci(ref, pred, accuracy, n_boot=1000, seed=1, clusters=tasks)
    assert lo_t <= 0.7 <= hi_t and (hi_t - lo_t) > 1.5 * (hi_i - lo_i)
    assert binary_agreement(ref, pred, n_boot=100, clusters=tasks).n_clusters == 10
    with pytest.raises(ValueError, match="one cluster key per item"):
        bootstrap_ci(ref, pred, accuracy, clusters=tasks[:-1])


def test_labeller_agreement_pairwise_and_fleiss(tmp_path):
    store = LabelStore(tmp_path)
    ana = {"a": True, "b": True, "c": False, "d": False}
    bo = {"a": True, "b": False, "c": False, "d": False}
    cy = {"a": True, "b": True, "c": False}
    for who, table in (("ana", ana), ("bo", bo), ("cy", cy)):
        for h, v in table.items():
            store.save(_label(h, who, v, False))
    store.save(_label("a", "construction", True, True, kind="constructed"))  # must be left out
    rep = labeller_agreement(tmp_path)
    assert rep["labellers"] == ["ana", "bo", "cy"]
    pairs = {(p["a"], p["b"]): p for p in rep["fields"]["bgd_intention"]["pairwise"]}
    # ana vs bo: 3/4 agree; po = .75, pe = (2/4)(1/4) + (2/4)(3/4) = .5, kappa = .5
    assert pairs[("ana", "bo")]["accuracy"] == pytest.approx(0.75) and pairs[("ana", "bo")]["kappa"] == pytest.approx(0.5)
    assert pairs[("ana", "cy")]["n"] == 3 and pairs[("ana", "cy")]["kappa"] == pytest.approx(1.0)
    # items a, b, c rated by all three: counts [[0,3],[1,2],[3,0]]: P_i = 1, 1/3, 1 -> 7/9; p = 4/9, 5/9 -> Pe = 41/81
    assert rep["fields"]["bgd_intention"]["fleiss_n"] == 3
    assert rep["fields"]["bgd_intention"]["fleiss_kappa"] == pytest.approx(0.55)
    # completion: everyone said no everywhere: kappa undefined, reported as None
    assert rep["fields"]["bgd_completion"]["pairwise"][0]["kappa"] is None


def test_label_rules_are_enforced():
    with pytest.raises(ValueError, match="completion without intention"):
        _label("a", "x", False, True)
    with pytest.raises(ValueError, match="over-refusal"):
        _label("a", "x", False, False, pattern="control")
    assert _label("a", "x", False, False, pattern="control", o=True).over_refusal is True
