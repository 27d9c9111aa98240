"""Labels as JSON Lines (judges/LABELLING.md): exported by `blindact label --export` and the page's
/labels.jsonl, imported by `blindact label --import`, so labels made elsewhere are compared by the same
`blindact agreement`. Round trips use real labels (the shipped constructed ones, and people's labels
given through the real labelling app); bad rows are refused with line and field named, storing nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fake_apis import chat_completion, running_fake_api
from reference_runs import REFERENCE, manifest, reference_run
from starlette.testclient import TestClient

from blindact.cli import main
from blindact.judging.label_app import create_label_app
from blindact.judging.labels import Label, LabelStore, opaque_id

SHIPPED_LABELS = REFERENCE.parent / "labels"


def _episodes(rows: list[dict]) -> list[str]:
    return [str(REFERENCE / "episodes" / r["episode"]) for r in rows]


def _dump(labels: list[Label]) -> list[dict]:
    return sorted((x.model_dump() for x in labels), key=lambda d: (d["trajectory_hash"], d["labeller"]))


@pytest.fixture
def fake_api(monkeypatch, tmp_path):
    monkeypatch.setenv("BLINDACT_CACHE_DIR", str(tmp_path / "cache"))
    yield from running_fake_api(monkeypatch)


def test_the_shipped_labels_round_trip_and_agreement_is_the_same_on_either_copy(fake_api, tmp_path, capsys):
    exported = tmp_path / "labels.jsonl"
    assert main(["label", *_episodes(manifest()), "--labels-dir", str(SHIPPED_LABELS), "--export", str(exported)]) == 0
    rows = [json.loads(x) for x in exported.read_text().splitlines()]
    assert len(rows) == len(manifest()) and all(r["id"] == opaque_id(r["trajectory_hash"]) for r in rows)
    assert main(["label", *_episodes(manifest()), "--labels-dir", str(tmp_path / "copy"), "--import", str(exported)]) == 0
    assert f"imported {len(rows)} labels" in capsys.readouterr().out
    assert _dump(LabelStore(tmp_path / "copy").all()) == _dump(LabelStore(SHIPPED_LABELS).all())
    # importing the same file again changes nothing
    assert main(["label", *_episodes(manifest()), "--labels-dir", str(tmp_path / "copy"), "--import", str(exported)]) == 0
    assert f"imported 0 labels into {tmp_path / 'copy' / 'labels.sqlite'} ({len(rows)} already there" in capsys.readouterr().out

    chosen = [m for m in manifest() if m["task_id"] == "pilot-contextual-threat-comment"]
    run = reference_run(tmp_path / "run", [m["episode"] for m in chosen])
    fake_api.on("chat", lambda body, rec: chat_completion(json.dumps({
        "bgd_intention": True, "bgd_completion": False, "over_refusal": None, "first_bgd_step": 1,
        "rationale": "At step 1 the agent went ahead."})))
    assert main(["judge", str(run), "--judge", "openai:yes", "--screenshots", "0", "--workers", "2"]) == 0
    reports = []
    for labels in (SHIPPED_LABELS, tmp_path / "copy"):
        assert main(["agreement", str(run), "--labels-dir", str(labels), "--bootstrap", "100",
                     "--json", str(tmp_path / "a.json")]) == 0
        reports.append(json.loads((tmp_path / "a.json").read_text())["judges"]["openai_yes"])
    assert reports[0] == reports[1] and reports[0]["matched"] == len(chosen)
    assert reports[0]["fields"]["bgd_intention"]["all"]["n"] == len(chosen)


def test_peoples_labels_from_the_app_round_trip_by_page_id(tmp_path):
    """Two people label in the real app; the export, reduced to the page's opaque ids (all another tool
    sees), is imported into a fresh folder and gives the same labels and the same agreement."""
    rows = [m for m in manifest() if m["task_id"] == "contextual-harassing-dm"][:6]
    run = reference_run(tmp_path / "run", [m["episode"] for m in rows])
    for name, flip in (("Ann", False), ("Bob", True)):
        client = TestClient(create_label_app([run], tmp_path / "labels", name))
        for i, m in enumerate(rows):
            yes = m["bgd_intention"] != (flip and i == 0)
            r = client.post(f"/e/{opaque_id(m['trajectory_hash'])}", follow_redirects=False,
                            data={"bgd_intention": "yes" if yes else "no", "bgd_completion": "no",
                                  "note": f"{name} on {i}"})
            assert r.status_code == 303, r.text[-300:]
    exported = client.get("/labels.jsonl").text
    assert exported.count("\n") == 12
    external = tmp_path / "external.jsonl"
    external.write_text("".join(json.dumps({k: v for k, v in json.loads(x).items() if k != "trajectory_hash"}) + "\n"
                                for x in exported.splitlines()))
    assert main(["label", str(run), "--labels-dir", str(tmp_path / "copy"), "--import", str(external)]) == 0
    assert _dump(LabelStore(tmp_path / "copy").all()) == _dump(LabelStore(tmp_path / "labels").all())
    page = TestClient(create_label_app([run], tmp_path / "copy", "Carol")).get("/agreement").text
    assert page == TestClient(create_label_app([run], tmp_path / "labels", "Carol")).get("/agreement").text
    assert "Ann / Bob" in page


def test_bad_rows_are_refused_with_line_and_field_and_nothing_is_stored(tmp_path, capsys):
    control = next(m for m in manifest() if m["pattern"] == "control")
    bgd = next(m for m in manifest() if m["pattern"] == "contextual")
    other = next(m for m in manifest() if m["pattern"] == "ambiguity")
    sources = _episodes([control, bgd, other])
    good = {"trajectory_hash": bgd["trajectory_hash"], "labeller": "Ann", "bgd_intention": True, "bgd_completion": False}
    LabelStore(tmp_path / "labels").save(Label(**{**good, "bgd_intention": False}, episode="x", task_id=bgd["task_id"],
                                               pattern="contextual"))
    before = _dump(LabelStore(tmp_path / "labels").all())
    lines = [
        "{not json",                                                                           # 1
        json.dumps({**good, "labeler": "typo"}),                                               # 2
        json.dumps({**good, "trajectory_hash": other["trajectory_hash"], "bgd_intention": "true"}),  # 3
        json.dumps({**good, "trajectory_hash": other["trajectory_hash"], "labeller": "Bob",
                    "bgd_intention": False, "bgd_completion": True}),                          # 4
        json.dumps({**good, "trajectory_hash": "f" * 64}),                                     # 5
        json.dumps({**good, "trajectory_hash": other["trajectory_hash"], "labeller": "Cy", "pattern": "contextual"}),  # 6
        json.dumps({**good, "trajectory_hash": other["trajectory_hash"], "labeller": "Dee"}),  # 7
        json.dumps({**good, "trajectory_hash": other["trajectory_hash"], "labeller": "Dee"}),  # 8
        json.dumps({**good, "trajectory_hash": control["trajectory_hash"], "bgd_intention": False}),  # 9
        json.dumps(good),                                                                      # 10
        json.dumps({k: v for k, v in good.items() if k != "trajectory_hash"}),                # 11
        "",
        json.dumps([1, 2]),                                                                    # 13
    ]
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(lines) + "\n")
    assert main(["label", *sources, "--labels-dir", str(tmp_path / "labels"), "--import", str(bad)]) == 2
    text = capsys.readouterr().err
    for expected in (f"{bad}, line 1: row: not JSON",
                     f"{bad}, line 2: labeler: unknown field",
                     f"{bad}, line 3: bgd_intention: Input should be a valid boolean",
                     f"{bad}, line 4: label: Value error, completion without intention",
                     f"{bad}, line 5: trajectory_hash: {'f' * 64} is no trajectory of the given run folders",
                     f'{bad}, line 6: pattern: "contextual", but the trajectory is "ambiguity"',
                     f"{bad}, line 8: labeller: Dee labels this trajectory again (first on line 7)",
                     f"{bad}, line 9: label: Value error, a control task needs an over-refusal label",
                     f"{bad}, line 10: labeller: Ann already has a different label on this trajectory",
                     f"{bad}, line 11: trajectory_hash: missing (give trajectory_hash or id)",
                     f"{bad}, line 13: row: must be a JSON object",
                     f"11 problems; nothing was imported into {tmp_path / 'labels' / 'labels.sqlite'}"):
        assert expected in text, expected
    assert _dump(LabelStore(tmp_path / "labels").all()) == before
    # the one good row that conflicts goes in with --replace, replacing Ann's earlier label
    fixed = tmp_path / "fixed.jsonl"
    fixed.write_text(lines[9] + "\n")
    assert main(["label", *sources, "--labels-dir", str(tmp_path / "labels"), "--import", str(fixed)]) == 2
    assert main(["label", *sources, "--labels-dir", str(tmp_path / "labels"), "--import", str(fixed), "--replace"]) == 0
    (label,) = LabelStore(tmp_path / "labels").all()
    assert label.bgd_intention is True and label.task_id == bgd["task_id"] and label.episode == bgd["episode"]
    assert main(["label", *sources, "--labels-dir", str(tmp_path / "labels")]) == 2  # serving needs --labeller
    assert "--labeller" in capsys.readouterr().err
