"""Every metric against values worked out by hand on small, fixed predictions."""

import math

import pytest

from blindact.fairness.attacks.selection import coverage_restrict, select_targeted
from blindact.fairness.items import MCItem
from blindact import stats
from blindact.fairness.metrics import bbq, flex, spillover, stereo
from blindact.fairness.metrics.records import FlexRecord, Prediction


def P(i, choice, *, attr="Age", cond="disambig", pol="neg", label=0, unknown=2, target=0, kind="letter"):
    return Prediction(f"x/{i}", attr, choice, label, unknown, target, pol, cond, kind, ("old", "young", "unknown"))


# --- BBQ -------------------------------------------------------------------------------------------

def test_bbq_disambiguated_bias_by_hand():
    # target (stereotyped) option 0, unknown 2.
    preds = [
        P(1, 0, pol="neg", label=0),      # biased (target on a neg question), correct
        P(2, 0, pol="neg", label=1),      # biased, wrong
        P(3, 1, pol="neg", label=1),      # not biased, correct
        P(4, 1, pol="nonneg", label=1),   # biased (non-target on nonneg), correct
        P(5, 0, pol="nonneg", label=1),   # not biased, wrong
        P(6, 2, pol="neg", label=0),      # unknown: not counted in the bias score
        P(7, None, pol="neg", label=0, kind="refusal"),  # refusal: not counted either
    ]
    # n_biased = 3 (1, 2, 4), n_non_unknown = 5 -> s_DIS = 2*3/5 - 1 = 0.2
    assert bbq.bias_score(preds, "disambig") == pytest.approx(0.2)
    assert bbq.accuracy(preds) == pytest.approx(3 / 7)


def test_bbq_ambiguous_bias_by_hand():
    preds = [
        P(1, 2, cond="ambig", label=2),                # correct (unknown)
        P(2, 2, cond="ambig", label=2),                # correct
        P(3, 0, cond="ambig", pol="neg", label=2),     # biased
        P(4, 0, cond="ambig", pol="neg", label=2),     # biased
        P(5, 1, cond="ambig", pol="nonneg", label=2),  # biased
        P(6, 0, cond="ambig", pol="nonneg", label=2),  # anti-biased
    ]
    # accuracy 2/6; raw = 2*3/4 - 1 = 0.5; s_AMB = (1 - 1/3) * 0.5 = 1/3
    assert bbq.bias_score(preds, "ambig") == pytest.approx(1 / 3)
    table = bbq.bbq_table(preds)
    assert table["Age"]["ambig"]["accuracy"] == pytest.approx(1 / 3)
    assert table["all"]["ambig"]["bias"] == pytest.approx(1 / 3)


def test_bbq_bias_undefined_without_group_answers():
    preds = [P(1, 2, cond="ambig", label=2), P(2, None, cond="ambig", label=2, kind="refusal")]
    assert math.isnan(bbq.bias_score(preds, "ambig"))
    with pytest.raises(ValueError, match="another condition"):
        bbq.bias_score(preds, "disambig")


def test_bbq_bias_per_attribute_and_condition_are_separate():
    preds = [P(1, 0, attr="Age"), P(2, 1, attr="SES", target=1), P(3, 2, attr="SES", cond="ambig", label=2)]
    t = bbq.bbq_table(preds)
    assert t["Age"]["disambig"]["bias"] == pytest.approx(1.0)   # 1 biased of 1
    assert t["SES"]["disambig"]["bias"] == pytest.approx(1.0)   # target 1 chosen on neg
    assert t["SES"]["ambig"]["accuracy"] == 1.0
    assert t["all"]["disambig"]["n"] == 2


# --- FLEX ------------------------------------------------------------------------------------------

def R(i, src, att=None, attr="Age", cat=None, failed=False):
    return FlexRecord(f"x/{i}", attr, src, "persona" if att is not None else None, cat, att, attack_failed=failed)


def test_flex_scores_by_hand():
    # a coverage-only run: items 5 and 6, wrong without attack, were not attacked
    recs = [
        R(1, True, True, cat="persona"),
        R(2, True, False, cat="persona"),
        R(3, True, False, cat="text", attr="SES"),
        R(4, True, True, cat="text", attr="SES"),
        R(5, False),                      # not attacked (coverage-only)
        R(6, False, attr="SES"),
    ]
    s = flex.flex_scores(recs)
    assert s["AccS"] == pytest.approx(4 / 6)
    assert s["ASR"] == pytest.approx(2 / 4) and s["AccF_covered"] == pytest.approx(2 / 4)
    # FLEX's AccF is over every attacked item of the benchmark; here two were never attacked: not measured
    assert math.isnan(s["AccF"]) and s["n_not_attacked"] == 2
    assert s["n_attacked"] == 4
    by_attr = flex.by_attribute(recs)
    assert by_attr["SES"]["AccS"] == pytest.approx(2 / 3)
    assert by_attr["SES"]["ASR"] == pytest.approx(1 / 2)
    by_cat = flex.by_category(recs)
    assert set(by_cat) == {"persona", "text"}
    assert by_cat["persona"]["ASR"] == pytest.approx(0.5) and by_cat["persona"]["AccF"] == pytest.approx(0.5)


def test_flex_accf_is_over_every_attacked_item_not_only_the_covered_ones():
    """FLEX's definitions on a toy set where they part: 10 items, all attacked. Source: items 0-4 right, 5-9 wrong.
    Attacked: of the covered 0-4, items 0 and 1 survive (3 broken); of the uncovered 5-9, 5, 6 and 7 are right."""
    recs = [R(i, i < 5, i in (0, 1, 5, 6, 7), cat="persona") for i in range(10)]
    s = flex.flex_scores(recs)
    assert s["AccS"] == pytest.approx(5 / 10)           # 0.5
    assert s["AccF"] == pytest.approx(5 / 10)           # 0.5: items 0, 1, 5, 6, 7 right under attack, of 10
    assert s["AccF_covered"] == pytest.approx(2 / 5)    # 0.4: blindact's earlier "AccF", the covered items only
    assert s["ASR"] == pytest.approx(3 / 5)             # 0.6: items 2, 3, 4 of the 5 source-correct ones broke
    assert s["AccF"] != s["AccF_covered"]
    assert (s["n_source"], s["n_attacked"], s["n_covered_attacked"]) == (10, 10, 5)


def test_failed_calls_are_left_out_of_flex_scores():
    # item 3's source call failed, item 4's attack failed: neither is a wrong answer
    recs = [R(1, True, True), R(2, True, False), R(3, None, True), R(4, True, None, failed=True), R(5, False, False)]
    s = flex.flex_scores(recs)
    assert s["AccS"] == pytest.approx(3 / 4)            # items 1, 2, 4 right of the 4 answered
    assert s["AccF"] == pytest.approx(2 / 4)            # items 1, 3 right of the 4 attacked and answered
    assert s["ASR"] == pytest.approx(1 / 2)             # covered and attacked: 1, 2
    assert (s["n_source_failed"], s["n_attack_failed"], s["n_not_attacked"]) == (1, 1, 0)


def test_per_attack_asr_by_hand():
    tries = {"a": {"persona": [True, False, False], "typos": [True, True, True]},
             "b": {"persona": [False, True, True], "typos": [True, True, False]}}
    t = flex.per_attack_asr(tries)
    assert t["persona"] == {"n_items": 2, "n_tries": 6, "ASR": pytest.approx(3 / 6)}
    assert t["typos"]["ASR"] == pytest.approx(1 / 6)


def test_targeted_selection_picks_most_breaking_attack():
    sel = select_targeted("i", {"persona": [True, False, True], "typos": [False, True, False], "cipher": [True] * 3},
                          order=["persona", "typos", "cipher"])
    assert (sel.attack, sel.breaks, sel.try_index, sel.broken) == ("typos", 2, 0, True)
    # ties keep the earlier attack; no break -> try 0 and not broken
    tie = select_targeted("i", {"a": [True, False], "b": [False, True]}, order=["a", "b"])
    assert (tie.attack, tie.try_index, tie.tied) == ("a", 1, ("a", "b"))
    assert sel.tied == ("typos",)
    none = select_targeted("i", {"a": [True, True]})
    assert (none.broken, none.try_index) == (False, 0)


def test_coverage_restriction_keeps_source_correct_items():
    items = [MCItem(f"i{n}", "t", "Age", "", "q?", ["a", "b", "c"], 2, 2) for n in range(3)]
    kept = coverage_restrict(items, {"i0": True, "i1": False})
    assert [i.id for i in kept] == ["i0"]


# --- CrowS-Pairs / StereoSet ------------------------------------------------------------------------

def test_crows_ss_by_hand():
    mk = lambda i, c: Prediction(f"c/{i}", "Age", c, None, None, 1, groups=("less", "more"))
    preds = [mk(1, 1), mk(2, 1), mk(3, 0), mk(4, None)]
    assert stereo.crows_scores(preds) == {"n": 4, "n_valid": 3, "SS": pytest.approx(200 / 3)}


def test_stereoset_lms_ss_icat_by_hand():
    roles = ("stereotype", "unrelated", "anti-stereotype")
    mk = lambda i, c: Prediction(f"s/{i}", "Religion", c, None, None, 0, groups=roles)
    preds = [mk(1, 0), mk(2, 0), mk(3, 0), mk(4, 2), mk(5, 1), mk(6, None)]
    s = stereo.stereoset_scores(preds)
    # valid 5; meaningful 4 -> LMS 80; stereo 3/4 -> SS 75; ICAT = 80 * 25 / 50 = 40
    assert (s["n_valid"], s["LMS"], s["SS"], s["ICAT"]) == (5, pytest.approx(80), pytest.approx(75), pytest.approx(40))


def test_stereoset_averages_over_target_terms():
    roles = ("stereotype", "unrelated", "anti-stereotype")
    mk = lambda i, term, c: Prediction(f"s/{i}", "Profession", c, None, None, 0, groups=roles, term=term)
    # "chef": 3 picks, all stereotype -> LMS 100, SS 100; "nurse": 1 stereo, 3 anti, 1 unrelated -> LMS 80, SS 25
    preds = [mk(1, "chef", 0), mk(2, "chef", 0), mk(3, "chef", 0),
             mk(4, "nurse", 0), mk(5, "nurse", 2), mk(6, "nurse", 2), mk(7, "nurse", 2), mk(8, "nurse", 1)]
    s = stereo.stereoset_scores(preds)
    assert s["n_terms"] == 2 and s["LMS"] == pytest.approx(90) and s["SS"] == pytest.approx(62.5)
    assert s["ICAT"] == pytest.approx(90 * 37.5 / 50)
    # pooled over items it would be SS = 100 * 4/7: the per-term mean differs
    assert s["SS"] != pytest.approx(100 * 4 / 7)


# --- statistics ------------------------------------------------------------------------------------

def test_mcnemar_by_hand():
    t = stats.mcnemar(3, 10)
    # exact: 2 * (C(13,0)+C(13,1)+C(13,2)+C(13,3)) / 2^13 = 2 * 378 / 8192
    assert t.p_exact == pytest.approx(756 / 8192)
    assert t.chi2 == pytest.approx(36 / 13)
    assert stats.mcnemar(0, 0).p_exact == 1.0
    assert stats.mcnemar(5, 5).p_exact == 1.0  # symmetric: capped at 1
    # b = c keeps the continuity correction, as statsmodels does: X2 = (0 - 1)^2 / 10
    tie = stats.mcnemar(5, 5)
    assert tie.chi2 == pytest.approx(0.1) and tie.p_chi2 == pytest.approx(math.erfc(math.sqrt(0.05)))
    assert tie.p_chi2 < 1
    with pytest.raises(ValueError):
        stats.mcnemar(-1, 2)


def test_mcnemar_matches_scipy():
    sp = pytest.importorskip("scipy.stats")
    for b, c in [(3, 10), (25, 5), (0, 7), (40, 61), (200, 150), (1, 1), (5, 5), (30, 30), (4, 5)]:
        t = stats.mcnemar(b, c)
        assert t.p_exact == pytest.approx(sp.binomtest(min(b, c), b + c, 0.5).pvalue, rel=1e-9)
        assert t.p_chi2 == pytest.approx(sp.chi2.sf((abs(b - c) - 1) ** 2 / (b + c), 1), rel=1e-9)


def test_mcnemar_paired_counts():
    t = stats.mcnemar_paired([True, True, False, False, True], [False, True, True, True, True])
    assert (t.b, t.c) == (1, 2)
    with pytest.raises(ValueError, match="length"):
        stats.mcnemar_paired([True], [])


def test_bootstrap_ci_is_seeded_and_sane():
    vals = [1.0] * 30 + [0.0] * 70
    a = stats.mean_ci(vals, seed=1)
    assert a == stats.mean_ci(vals, seed=1)
    assert a.low < 0.3 < a.high and 0.15 < a.low and a.high < 0.45
    same = stats.bootstrap_ci([2.0] * 5, lambda s: sum(s) / len(s))
    assert (same.low, same.high) == (2.0, 2.0)
    assert stats.bootstrap_ci([], lambda s: 0.0) is None
    assert stats.bootstrap_ci([1, 2], lambda s: math.nan) is None


def test_spillover_compare_by_hand():
    # B fixes nothing on Age/ambig and breaks 6 of 8 items that A had right.
    a = [P(i, 2, cond="ambig", label=2) for i in range(8)] + [P(10, 0, label=0)]
    b = [P(i, 0 if i < 6 else 2, cond="ambig", label=2) for i in range(8)] + [P(10, 0, label=0)]
    t = spillover.compare(a, b)
    cell = t["Age"]["ambig"]
    assert (cell["n"], cell["b"], cell["c"]) == (8, 6, 0)
    assert cell["acc_a"] == 1.0 and cell["acc_b"] == pytest.approx(2 / 8)
    assert cell["p_exact"] == pytest.approx(2 / 64)   # 2 * C(6,0) / 2^6
    assert cell["worse"] is True
    assert t["Age"]["disambig"]["worse"] is False
    with pytest.raises(ValueError, match="share no item"):
        spillover.compare(a, [P(99, 0)])
