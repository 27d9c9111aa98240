"""`blindact fairness run --suite flames`: our prompt set, answers judged per dimension through the real
OpenAI SDK against the fake chat API (the judge's model is unreachable offline), figures fixed by the script."""

import collections
import json

import pytest
from fake_apis import chat_completion, running_fake_api

from blindact.fairness import cli, flames, runner


@pytest.fixture
def fake_api(monkeypatch, tmp_path):
    monkeypatch.setenv("BLINDACT_CACHE_DIR", str(tmp_path / "cache"))
    yield from running_fake_api(monkeypatch)


def test_prompt_set_covers_every_dimension_and_attack_style():
    prompts = flames.load_prompts()
    cells = collections.Counter((p.dimension, p.attack) for p in prompts)
    assert set(cells) == {(d, a) for d in flames.DIMENSIONS for a in flames.ATTACK_STYLES}
    assert set(cells.values()) == {2} and len({p.id for p in prompts}) == len(prompts) == 50
    picked = flames.sample(prompts, 5, seed=1)
    assert collections.Counter(p.dimension for p in picked) == {d: 5 for d in flames.DIMENSIONS}
    assert all(len({p.attack for p in picked if p.dimension == d}) == 5 for d in flames.DIMENSIONS)
    assert [p.id for p in picked] == [p.id for p in flames.sample(prompts, 5, seed=1)]
    with pytest.raises(ValueError, match="unknown Flames dimensions"):
        flames.load_prompts(["beauty"])


def test_flames_summary_by_hand():
    rec = lambda dim, attack, score: flames.FlamesRecord("x", dim, attack, "p", "r",
                                                         "judged" if score else "unjudged", score)
    recs = [rec("safety", "disguise", 3), rec("safety", "disguise", 1), rec("safety", "unsafe_inquiry", 2),
            rec("legality", "disguise", 3), rec("legality", "disguise", None)]
    s = flames.summarise(recs, n_boot=200)
    safety = s["by_dimension"]["safety"]
    assert (safety["n"], safety["judged"], safety["harmless_rate"]) == (3, 3, pytest.approx(1 / 3))
    assert safety["harmless_score"] == pytest.approx(100 * 6 / 9)
    assert s["by_dimension"]["legality"]["unjudged"] == 1 and s["by_dimension"]["legality"]["harmless_rate"] == 1.0
    assert s["by_attack"]["disguise"]["harmless_score"] == pytest.approx(100 * 7 / 9)
    lo, hi = safety["harmless_score_ci"]
    assert 100 / 3 <= lo <= safety["harmless_score"] <= hi <= 100
    # legality has one judged answer: no interval rather than a point passing for one
    assert safety["harmless_rate_ci"] is not None and s["by_dimension"]["legality"]["harmless_rate_ci"] is None
    # Flames' overall figures are the mean over the dimensions, not the pooled answers
    mean = s["by_dimension"]["mean"]
    assert mean["harmless_rate"] == pytest.approx((1 / 3 + 1) / 2)          # pooled would be 2/4
    assert mean["harmless_score"] == pytest.approx((100 * 6 / 9 + 100) / 2)  # pooled would be 100 * 9/12
    assert (mean["dimensions"], mean["n"], mean["judged"], mean["unjudged"]) == (2, 5, 4, 1)


def test_flames_failed_calls_are_left_out():
    rec = lambda score, status: flames.FlamesRecord("x", "safety", "disguise", "p", "r", status, score)
    s = flames.summarise([rec(3, "judged"), rec(1, "judged"), rec(None, "error")], n_boot=50)["by_dimension"]["safety"]
    assert (s["n"], s["judged"], s["unjudged"], s["failed"], s["harmless_rate"]) == (3, 2, 0, 1, 0.5)


def test_flames_run_end_to_end_through_the_sdk(fake_api, tmp_path):
    """The model complies with every legality prompt and declines the rest; the judge (by default another model
    than the one answering) scores compliance 1."""
    legality = {p.prompt for p in flames.load_prompts(["legality"])}

    def reply(body, rec):
        text = body["messages"][-1]["content"]
        if "response_format" in body:  # the harmlessness judge
            if "judge-breaker" in json.dumps(body):  # every retry too
                return chat_completion("not json at all")
            score = 1 if "Sure, here is how" in text else 3
            return chat_completion(json.dumps({"score": score, "rationale": "scripted verdict for the test"}))
        if text in legality:
            return chat_completion("Sure, here is how you would do it.")
        if "WhatsApp" in text:
            return chat_completion("judge-breaker")
        return chat_completion("I won't help with that, but here is a safer way to think about it.")

    fake_api.on("chat", reply)
    out = tmp_path / "flames"
    rc = cli.main(["run", "--model", "openai:gpt-4.1", "--suite", "flames", "--n-per-attribute", "0",
                   "--bootstrap", "100", "--out", str(out)])
    assert rc == 0
    doc = json.loads((out / "fairness_report.json").read_text())
    assert doc["summary"]["judge"] == {"spec": runner.DEFAULT_FLAMES_JUDGE, "self_judged": False}
    judged_by = {r.body["model"] for r in fake_api.requests("chat") if "response_format" in r.body}
    assert judged_by == {runner.DEFAULT_FLAMES_JUDGE.split(":", 1)[1]}  # the judge's calls went to the judge model
    dims = doc["summary"]["flames"]["by_dimension"]
    assert dims["legality"]["harmless_rate"] == 0.0 and dims["legality"]["harmless_score"] == pytest.approx(100 / 3)
    assert dims["safety"]["harmless_rate"] == 1.0 and dims["safety"]["harmless_score"] == 100.0
    # the answer that breaks the judge is unjudged, not scored
    assert dims["data_protection"]["unjudged"] == 1 and dims["data_protection"]["judged"] == 9
    # the mean over the five dimensions: legality 0, the four others 1 (data protection: 9 of 9 judged)
    assert dims["mean"]["n"] == 50 and dims["mean"]["harmless_rate"] == pytest.approx(4 / 5)
    assert doc["config"]["max_tokens"] == 256
    records = doc["flames_records"]
    assert len(records) == 50 and {r["status"] for r in records} == {"judged", "unjudged"}
    md = (out / "fairness_report.md").read_text()
    assert "## Flames-style harmlessness" in md and "| legality | 10 | 10 | 0 | 0.0 [0.0, 0.0] | 33.333" in md
    assert f"judge: `{runner.DEFAULT_FLAMES_JUDGE}` (not the model under test)" in md and "| mean | 50 |" in md
