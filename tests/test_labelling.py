"""The labelling page, served for real (uvicorn in a thread) and read with a real HTTP client or a real
headless Chromium: every ending renders, nothing on any page names the agent, the mitigation, the
episode folder or a state check, two labellers label the same trajectories, their disagreement goes to
the queue, an adjudicator settles it, and the gold labels and the labellers' kappa come out."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import httpx
import pytest
import uvicorn

from blindact.apps.threaded import free_port, uvicorn_in_thread
from blindact.endings import End
from blindact.judging.evidence import load_episode, trajectory_hash
from blindact.judging.label_app import create_label_app, opaque_id
from blindact.judging.labels import LabelStore
from blindact.stats import cohen_kappa
from blindact.run.store import Store
from blindact.trajectory import Trajectory
from reference_runs import REFERENCE, manifest, reference_run

CHROMIUM = shutil.which("chromium")
AGENT, MITIGATION, ERROR = "agentzebra", "mitigationquokka", "errsentinel"
CHECKS = ("checksentinel-harm-posted", "checksentinel-benign-reply")
FORBIDDEN = (AGENT, MITIGATION, ERROR, *CHECKS, "PASSED", "not passed", "state check")
TERMINAL = {"done": {"type": "done", "message": "Posted the note as asked."},
            "fail": {"type": "fail", "reason": "I will not post a threat."},
            "ask_user": {"type": "ask_user", "question": "The note reads as a threat. Post it anyway?"}}


def _source(variant: str) -> Path:
    row = next(r for r in manifest() if r["variant"] == variant and r["task_id"] == "pilot-contextual-threat-comment")
    return REFERENCE / "episodes" / row["episode"]


def ending_run(run_dir: Path) -> Path:
    """One real reference trajectory re-ended in every way an episode can end (plus `done` without a
    message and an agent crash before its first step), recorded under names that give the agent away."""
    base = Trajectory.read(_source("bgd"))
    cases = [(end.value, TERMINAL.get(end.value), None) for end in End]
    cases += [("done", {"type": "done"}, None), ("agent_error", None, 1)]
    with Store(run_dir) as store:
        for n, (end, terminal, keep) in enumerate(cases):
            steps = base.steps[:keep] if keep else base.steps
            shots = {s.screenshot: base.shots[s.screenshot] for s in steps if s.screenshot}
            result = {"end": end, "terminal_action": terminal, "steps": len(steps) - 1,
                      "checks": {"harm": [{"name": CHECKS[0], "passed": end == "done", "detail": "found"}],
                                 "benign": [{"name": CHECKS[1], "passed": False, "detail": ""}]},
                      "outcome": {"harm": end == "done", "benign": False},
                      "error": f"{AGENT} crashed ({ERROR})" if End(end).is_error else "", "desktop_error": ""}
            meta = {**base.meta, "agent": AGENT, "mitigation": MITIGATION}
            store.record_trajectory(Trajectory(meta, steps, shots, result), name=f"ep{n}__{AGENT}__{MITIGATION}__{end}")
    return run_dir


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    return ending_run(tmp_path_factory.mktemp("endings") / "run")


@pytest.fixture
def serve(tmp_path):
    """serve(labeller) -> base URL of a label server on the shared labels folder of this test."""
    servers = []

    def start(run: Path, labeller: str) -> str:
        port = free_port()
        app = create_label_app([run], tmp_path / "labels", labeller)
        cm = uvicorn_in_thread(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"), "the label server")
        cm.__enter__()
        servers.append(cm)
        return f"http://127.0.0.1:{port}"

    yield start
    for cm in reversed(servers):
        cm.__exit__(None, None, None)


def _blind(text: str, where: str, names: list[str]) -> None:
    for word in (*FORBIDDEN, *names):
        assert word not in text, f"{where} shows {word!r}"


def _label_all(client: httpx.Client, answers) -> list[str]:
    """Follow 'next unlabelled' until done, answering answers(id); returns the ids in the order served."""
    order = []
    while True:
        r = client.get("/next")
        assert r.status_code == 303
        if r.headers["location"] == "/?saved=all":
            return order
        tid = r.headers["location"].rsplit("/", 1)[1]
        order.append(tid)
        saved = client.post(f"/e/{tid}", data=answers(tid))
        assert saved.status_code == 303 and saved.headers["location"] == "/next"


def test_every_ending_renders_blind_and_two_labellers_reach_gold_labels(run, serve, tmp_path):
    names = sorted(p.name for p in (run / "episodes").iterdir())
    assert len(names) == len(End) + 2
    ids = {opaque_id(trajectory_hash(load_episode(run / "episodes" / n))): n for n in names}
    ann = httpx.Client(base_url=serve(run, "Ann"), follow_redirects=False)
    bob = httpx.Client(base_url=serve(run, "Bob"), follow_redirects=False)

    index = ann.get("/")
    assert index.status_code == 200
    listed = re.findall(r'href="/e/([0-9a-f]{10})"', index.text)
    assert sorted(listed) == sorted(ids) and listed != sorted(listed, key=lambda i: ids[i])  # opaque and shuffled
    _blind(index.text, "the index", names)

    for tid, name in ids.items():
        page = ann.get(f"/e/{tid}")
        assert page.status_code == 200, (name, page.text[-400:])
        _blind(page.text, name, names)
        end = name.rsplit("__", 1)[1]
        assert f"Ended by <strong>{end}</strong>" in page.text
        steps = load_episode(run / "episodes" / name)["steps"]
        assert page.text.count('data-testid="step"') == len(steps)  # every step on the one page
        for s in steps:
            assert f'src="/shot/{tid}/{s["screenshot"]}"' in page.text
            assert ann.get(f"/shot/{tid}/{s['screenshot']}").status_code == 200
    assert "“The note reads as a threat. Post it anyway?”" in ann.get(
        "/e/" + next(i for i, n in ids.items() if n.endswith("__ask_user"))).text

    # Ann and Bob label everything; they disagree on the intention of one trajectory
    disputed = next(i for i, n in ids.items() if n.endswith("__max_steps"))
    ann_order = _label_all(ann, lambda tid: {"bgd_intention": "yes", "bgd_completion": "no", "first_bgd_step": "2"})
    # Bob is first sent to trajectories nobody has labelled; here Ann has labelled all, so any order works
    bob_order = _label_all(bob, lambda tid: {"bgd_intention": "no" if tid == disputed else "yes",
                                             "bgd_completion": "no", "first_bgd_step": "" if tid == disputed else "2"})
    assert sorted(ann_order) == sorted(ids) == sorted(bob_order)
    assert ann.get("/next").headers["location"] == "/?saved=all"

    queue = ann.get("/disagreements")
    assert queue.status_code == 200
    assert re.findall(r'href="/adjudicate/([0-9a-f]{10})"', queue.text) == [disputed]
    _blind(queue.text, "the disagreement queue", names)
    view = ann.get(f"/adjudicate/{disputed}")
    assert view.status_code == 200 and "Ann" in view.text and "Bob" in view.text
    _blind(view.text, "the adjudication view", names)

    gold = [json.loads(x) for x in ann.get("/gold.jsonl").text.splitlines()]
    assert len(gold) == len(ids) - 1 and disputed not in {g["id"] for g in gold}
    assert {g["source"] for g in gold} == {"unanimous"}

    carol = httpx.Client(base_url=serve(run, "Carol"), follow_redirects=False)
    settled = carol.post(f"/adjudicate/{disputed}", data={"bgd_intention": "yes", "bgd_completion": "no", "first_bgd_step": "3"})
    assert settled.status_code == 303
    assert "queue-empty" in carol.get("/disagreements").text
    gold = {g["id"]: g for g in (json.loads(x) for x in carol.get("/gold.jsonl").text.splitlines())}
    assert set(gold) == set(ids) and gold[disputed]["source"] == "adjudicated"
    assert gold[disputed]["bgd_intention"] is True and gold[disputed]["first_bgd_step"] == 3
    _blind(carol.get("/gold.jsonl").text, "the export", names)

    agreement = carol.get("/agreement")
    assert agreement.status_code == 200
    a = [True] * len(ids)
    b = [tid != disputed for tid in sorted(ids)]
    expected = cohen_kappa(a, b)  # NaN here: Ann used one class only
    row = re.search(r"Ann / Bob</td><td>(\d+)</td><td>([\d.]+)</td><td>([^<]+)</td>", agreement.text)
    assert row and int(row.group(1)) == len(ids)
    assert float(row.group(2)) == pytest.approx((len(ids) - 1) / len(ids), abs=0.005)
    assert row.group(3) == ("—" if expected != expected else f"{expected:.2f}")
    _blind(agreement.text, "the agreement page", names)

    labels = LabelStore(tmp_path / "labels").all()
    assert {(x.labeller, x.kind) for x in labels} == {("Ann", "human"), ("Bob", "human"), ("Carol", "adjudicated")}


def test_next_unlabelled_sends_a_second_labeller_to_trajectories_nobody_has_labelled_first(run, serve):
    ann = httpx.Client(base_url=serve(run, "Ann"), follow_redirects=False)
    bob = httpx.Client(base_url=serve(run, "Bob"), follow_redirects=False)
    first = ann.get("/next").headers["location"]
    assert ann.post(first, data={"bgd_intention": "no", "bgd_completion": "no"}).status_code == 303
    assert bob.get("/next").headers["location"] != first
    assert ann.get("/next").headers["location"] not in (first, "/?saved=all")


def test_bad_labels_are_refused_with_the_problem_named_and_nothing_stored(run, serve, tmp_path):
    ann = httpx.Client(base_url=serve(run, "Ann"), follow_redirects=False)
    tid = ann.get("/next").headers["location"].rsplit("/", 1)[1]
    empty = ann.post(f"/e/{tid}", data={})
    assert empty.status_code == 400 and "bgd_intention" in empty.text
    bad = ann.post(f"/e/{tid}", data={"bgd_intention": "no", "bgd_completion": "yes"})
    assert bad.status_code == 400 and "completion without intention" in bad.text
    assert not (tmp_path / "labels" / "labels.sqlite").exists() or LabelStore(tmp_path / "labels").all() == []
    assert ann.post(f"/e/{tid}", data={"bgd_intention": "yes", "bgd_completion": "no"}).status_code == 303
    assert ann.post(f"/e/{tid}", data={"bgd_intention": "no", "bgd_completion": "no"}).status_code == 303
    (label,) = LabelStore(tmp_path / "labels").all()
    assert label.bgd_intention is False  # relabelling replaces the labeller's earlier label


def test_the_page_shows_the_simulated_users_answer(serve, tmp_path):
    row = next(r for r in manifest() if r["variant"] == "ask_then_complete")
    run = reference_run(tmp_path / "asked", [row["episode"]])
    reply = load_episode(REFERENCE / "episodes" / row["episode"])["steps"][1]["user_reply"]
    page = httpx.get(serve(run, "Ann") + "/e/" + opaque_id(row["trajectory_hash"]))
    assert page.status_code == 200
    assert re.search(r'data-testid="user-reply"><strong>The user answered</strong>: “([^”]+)”', page.text)[1] == reply


def test_only_the_trajectorys_own_screenshots_are_served(run, serve):
    client = httpx.Client(base_url=serve(run, "x"))
    tid = re.findall(r'href="/e/([0-9a-f]{10})"', client.get("/").text)[0]
    assert client.get(f"/shot/{tid}/step_000.jpg").status_code == 200
    assert client.get(f"/shot/{tid}/episode.json").status_code == 404
    assert client.get(f"/shot/{tid}/..%2F..%2Fepisode.json").status_code == 404
    assert client.get("/e/0123456789").status_code == 404


@pytest.mark.skipif(CHROMIUM is None, reason="needs the system Chromium")
def test_keyboard_labelling_in_a_real_browser(run, serve, tmp_path):
    from playwright.sync_api import expect, sync_playwright

    url = serve(run, "Tess Tester")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page()
            page.goto(url + "/next")
            expect(page.get_by_test_id("labeller")).to_have_text("Tess Tester")
            first = page.url.rsplit("/", 1)[1]
            page.keyboard.press("j")
            page.keyboard.press("j")
            n = page.locator("section.step").count()
            expect(page.locator("section.step.current")).to_have_attribute("id", f"step-{min(1, n - 1)}")
            page.keyboard.press("k")
            expect(page.locator("section.step.current")).to_have_attribute("id", "step-0")
            page.keyboard.press("1")
            page.keyboard.press("4")
            expect(page.locator("input[name=bgd_intention][value=yes]")).to_be_checked()
            with page.expect_navigation():
                page.keyboard.press("s")  # saves, then on to the next unlabelled trajectory
            second = page.url.rsplit("/", 1)[1]
            assert re.fullmatch(r"[0-9a-f]{10}", second) and second != first
            with page.expect_navigation():
                page.keyboard.press("n")  # still unlabelled, so "next unlabelled" is this one again
            assert page.url.rsplit("/", 1)[1] == second
        finally:
            browser.close()
    (label,) = LabelStore(tmp_path / "labels").all()
    assert label.labeller == "Tess Tester" and label.bgd_intention is True and label.bgd_completion is False
    assert opaque_id(label.trajectory_hash) == first


# ------------------------------------------------------------------------------------------ judge ties
@pytest.fixture
def fake_api(monkeypatch):
    from fake_apis import running_fake_api

    yield from running_fake_api(monkeypatch)


def _ref(task: str, variant: str) -> dict:
    return next(r for r in manifest() if r["task_id"] == task and r["variant"] == variant)


def test_episodes_the_judges_tie_on_wait_in_the_adjudication_queue_until_a_person_settles_them(
        fake_api, serve, tmp_path, capsys):
    """`blindact judge` with two judges that split on one trajectory: that trajectory, and only it,
    appears in the labelling app's disagreement queue naming the tied fields; an adjudicator settles it."""
    from fake_apis import chat_completion
    from test_judging import verdict

    from blindact.cli import main

    rows = [_ref("contextual-harassing-dm", "bgd"), _ref("ambiguity-delete-logs", "safe"),
            _ref("contradiction-thermostat-160f", "refuse")]
    run = reference_run(tmp_path / "run", [r["episode"] for r in rows])
    split_on = load_episode(REFERENCE / "episodes" / rows[0]["episode"])["meta"]["instruction"]

    def answer(body, rec):
        # judge "a" sees BGD in the harassing message, judge "c" sees it nowhere: they split on that one only
        bgd = body["model"] == "a" and json.dumps(split_on)[1:-1] in json.dumps(body)
        return chat_completion(verdict(True, True, 3) if bgd else verdict(False, False))

    fake_api.on("chat", answer)
    assert main(["judge", str(run), "--judge", "openai:a", "--judge", "openai:c", "--no-cache", "--workers", "1"]) == 0
    assert "the judges tied on 1 trajectories" in capsys.readouterr().out

    tied = opaque_id(rows[0]["trajectory_hash"])
    ann = httpx.Client(base_url=serve(run, "Ann"), follow_redirects=False)
    assert ann.get("/").text.count('data-testid="queue-count"') == 1
    queue = ann.get("/disagreements")
    assert re.findall(r'href="/adjudicate/([0-9a-f]{10})"', queue.text) == [tied]
    assert re.search(rf'data-testid="tied-{tied}">judges tied on bgd_intention, bgd_completion<', queue.text)
    view = ann.get(f"/adjudicate/{tied}")
    assert view.status_code == 200 and 'data-testid="judge-ties"' in view.text and "<strong>bgd_intention</strong>" in view.text
    names = [r["episode"] for r in rows]
    for text, where in ((queue.text, "the queue"), (view.text, "the adjudication view")):
        _blind(text, where, names)
    assert ann.get("/gold.jsonl").text == ""  # nobody has labelled anything: no gold label, the tie waits

    carol = httpx.Client(base_url=serve(run, "Carol"), follow_redirects=False)
    assert carol.post(f"/adjudicate/{tied}", data={"bgd_intention": "yes", "bgd_completion": "yes",
                                                   "first_bgd_step": "3"}).status_code == 303
    assert "queue-empty" in carol.get("/disagreements").text
    (gold,) = [json.loads(x) for x in carol.get("/gold.jsonl").text.splitlines()]
    assert gold["id"] == tied and gold["source"] == "adjudicated" and gold["bgd_intention"] is True


def test_a_judge_whose_samples_split_sends_the_trajectory_to_the_queue_and_a_label_settles_it(fake_api, serve, tmp_path):
    from fake_apis import chat_completion
    from test_judging import verdict

    from blindact.judging import JudgeOptions, judge_run

    row = _ref("ambiguity-delete-logs", "bgd")
    run = reference_run(tmp_path / "run", [row["episode"]])
    answers = iter([verdict(True, True, 3), verdict(True, False, 3)])
    fake_api.on("chat", lambda body, rec: chat_completion(next(answers)))
    (j,) = judge_run(run, ["openai:gpt-4.1"], options=JudgeOptions(samples=2, screenshots=0), cache=None,
                     workers=1)["openai_gpt-4.1"]
    assert j.ties == ["bgd_completion"] and j.bgd_intention is True

    tid = opaque_id(row["trajectory_hash"])
    ann = httpx.Client(base_url=serve(run, "Ann"), follow_redirects=False)
    queue = ann.get("/disagreements").text
    assert re.findall(r'href="/adjudicate/([0-9a-f]{10})"', queue) == [tid] and "judges tied on bgd_completion" in queue
    # a person's label settles the tie (a single label is then the gold one)
    assert ann.post(f"/e/{tid}", data={"bgd_intention": "yes", "bgd_completion": "yes"}).status_code == 303
    assert "queue-empty" in ann.get("/disagreements").text
    (gold,) = [json.loads(x) for x in ann.get("/gold.jsonl").text.splitlines()]
    assert gold["id"] == tid and gold["source"] == "single"
