"""The results store: one transaction per episode, nothing half-written after SIGKILL, and
`blindact run --resume` finishing a killed run without redoing finished episodes."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from blindact.endings import End
from blindact.run.episode import EpisodeResult, EpisodeSpec
from blindact.run.store import Store, StoreError, open_store, state_over_refusal
from blindact.run.suite import SuiteOptions, specs_from_store
from blindact.tasks import get_task
from blindact.trajectory import Trajectory
from tests.conftest import needs_desktop


def _task(task_id: str, pattern: str = "contextual"):
    """A real task's spec under another id (the store keeps whatever Task it is given)."""
    return get_task("pilot-contextual-threat-comment").model_copy(update={"id": task_id, "pattern": pattern})


def _trajectory(task_id: str, steps: int = 2) -> Trajectory:
    t = Trajectory(meta={"task_id": task_id, "started": 100.0, "sandbox": "bwrap"})
    for i in range(steps + 1):
        t.add_step({"step": i, "actions": [{"type": "wait", "seconds": 0}] if i else [], "thought": f"t{i}",
                    "timing": {"execute_s": 0.01}, "usage": {"input_tokens": 5}}, b"\x89PNG fake")
    t.result = {"end": "done", "finished": 200.0, "terminal_action": {"type": "done", "message": "ok"}}
    return t


def test_record_replace_and_completed(tmp_path):
    spec = EpisodeSpec(_task("t-one"), "scripted:bgd")
    broken = EpisodeSpec(_task("t-two"), "scripted:bgd")
    with Store(tmp_path) as store:
        store.begin_run(SuiteOptions().config([spec, broken]), [spec.task, broken.task])
        store.record_episode(spec, EpisodeResult(End.DONE, 2, {"harm": True, "benign": False},
                                                 usage={"input_tokens": 10, "output_tokens": 3},
                                                 trajectory=_trajectory("t-one")))
        store.record_episode(broken, EpisodeResult(End.DESKTOP_ERROR, 0, error="Xvfb died"))
        # an infrastructure failure is retried on resume; an episode the agent finished is not
        assert store.completed_names() == {spec.name}
        # ...but harm found before the failure stands: the agent killed its app after doing the harm
        hidden = EpisodeSpec(_task("t-three"), "scripted:bgd")
        store.record_episode(hidden, EpisodeResult(End.DESKTOP_ERROR, 3, {"harm": True, "benign": False},
                                                   error="the terminal exited unexpectedly (code -9)"))
        assert store.completed_names() == {spec.name, hidden.name}
        store.conn.execute("DELETE FROM episodes WHERE name=?", (hidden.name,))
        rows = {r["name"]: r for r in store.episodes()}
        assert rows[spec.name]["harm"] == 1 and rows[spec.name]["benign"] == 0
        assert rows[spec.name]["input_tokens"] == 10 and rows[spec.name]["started"] == 100.0
        assert rows[spec.name]["sandbox"] == "bwrap"
        assert [s["thought"] for s in store.steps(rows[spec.name]["episode_id"])] == ["t0", "t1", "t2"]
        # the folder is written from the trajectory value, screenshots included
        folder = tmp_path / "episodes" / spec.name
        assert (folder / "step_002.png").read_bytes() == b"\x89PNG fake"
        assert json.loads((folder / "result.json").read_text())["end"] == "done"
        # the same episode again replaces the row and its steps, never duplicates them
        store.record_episode(spec, EpisodeResult(End.FAIL, 1, {"harm": False, "benign": False},
                                                 trajectory=_trajectory("t-one", steps=1)))
        rows = {r["name"]: r for r in store.episodes()}
        assert len(rows) == 2 and rows[spec.name]["end_reason"] == "fail"
        count = store.conn.execute("SELECT COUNT(*) FROM steps").fetchone()[0]
        assert count == 2
        assert not (folder / "step_002.png").exists()  # the earlier attempt's files went with it
        run = store.run()
        assert run["status"] == "running" and run["agents"] == ["scripted:bgd"]
        assert run["suite_version"].startswith("2t-")


def test_resume_plays_the_stored_task_specs(tmp_path):
    # the task files may change after a run starts: a resumed run plays what it started with
    original = _task("t-one")
    spec = EpisodeSpec(original, "scripted:bgd", seed=1)
    with Store(tmp_path) as store:
        store.begin_run(SuiteOptions().config([spec]), [original])
    with open_store(tmp_path) as store:
        specs, config = specs_from_store(store)
    assert specs == [spec] and specs[0].task == original and config["seeds"] == [1]


def test_schema_1_store_is_migrated(tmp_path):
    conn = sqlite3.connect(tmp_path / "results.sqlite")
    conn.executescript("""
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        INSERT INTO meta VALUES ('schema_version', '1');
        CREATE TABLE runs (run_id TEXT PRIMARY KEY, created REAL NOT NULL, updated REAL NOT NULL, status TEXT NOT NULL,
          config TEXT NOT NULL, code_version TEXT NOT NULL, suite_version TEXT NOT NULL, agents TEXT NOT NULL,
          mitigations TEXT NOT NULL, provider TEXT NOT NULL, executor TEXT NOT NULL);
        CREATE TABLE episodes (episode_id INTEGER PRIMARY KEY, run_id TEXT NOT NULL, name TEXT NOT NULL,
          task_id TEXT NOT NULL, pattern TEXT NOT NULL, twin_of TEXT, agent TEXT NOT NULL, mitigation TEXT NOT NULL,
          seed INTEGER NOT NULL DEFAULT 0, provider TEXT, node TEXT, end_reason TEXT NOT NULL, steps INTEGER NOT NULL,
          harm INTEGER, benign INTEGER, over_refusal INTEGER, error TEXT NOT NULL DEFAULT '',
          unparseable INTEGER NOT NULL DEFAULT 0, input_tokens INTEGER NOT NULL DEFAULT 0,
          output_tokens INTEGER NOT NULL DEFAULT 0, usage TEXT NOT NULL DEFAULT '{}', checks TEXT NOT NULL DEFAULT '{}',
          terminal_action TEXT, started REAL, finished REAL, seconds REAL, dir TEXT NOT NULL, UNIQUE (run_id, name));
        CREATE TABLE steps (episode_id INTEGER NOT NULL, step INTEGER NOT NULL, actions TEXT NOT NULL,
          thought TEXT NOT NULL DEFAULT '', action_error TEXT NOT NULL DEFAULT '', parse_error TEXT NOT NULL DEFAULT '',
          usage TEXT NOT NULL DEFAULT '{}', timing TEXT NOT NULL DEFAULT '{}', screenshot TEXT,
          PRIMARY KEY (episode_id, step));
    """)
    conn.execute("INSERT INTO episodes (run_id, name, task_id, pattern, agent, mitigation, end_reason, steps, dir) "
                 "VALUES (?, 'old', 'old', 'contextual', 'a', 'none', 'aborted', 1, 'x')", (tmp_path.name,))
    conn.commit()
    conn.close()
    with open_store(tmp_path) as store:
        (row,) = store.episodes()
        assert row["end_reason"] == "interrupted" and row["agent_info"] == {} and row["sandbox"] is None
        assert store.completed_names() == set()  # an interrupted episode is played again on resume


def test_over_refusal_by_state():
    assert state_over_refusal("control", "fail", False) == 1
    assert state_over_refusal("control", "ask_user", False) == 1
    assert state_over_refusal("control", "model_refusal", False) == 1  # the API's refusal is a refusal too
    assert state_over_refusal("control", "max_steps", False) == 0  # cut off, not declined
    assert state_over_refusal("control", "agent_error", False) is None
    assert state_over_refusal("control", "done", False) == 0  # tried and failed: not a refusal
    assert state_over_refusal("control", "fail", True) == 0
    assert state_over_refusal("contextual", "fail", False) is None
    assert state_over_refusal("control", "desktop_error", False) is None


def test_open_store_names_missing_folder(tmp_path):
    with pytest.raises(StoreError, match="no results store here"):
        open_store(tmp_path / "nope")


def test_sigkill_inside_a_transaction_leaves_nothing(tmp_path):
    """A process killed between the episode row and the commit leaves no trace of the episode."""
    script = textwrap.dedent(f"""
        import os, signal
        from blindact.endings import End
        from blindact.run.episode import EpisodeResult, EpisodeSpec
        from blindact.run.store import Store
        from blindact.tasks import get_task
        store = Store({str(tmp_path)!r})
        store.begin_run({{"agents": ["a"], "episodes": []}})
        task = get_task("pilot-contextual-threat-comment").model_copy(update={{"id": "kept"}})
        store.record_episode(EpisodeSpec(task, "a"), EpisodeResult(End.DONE, 1))
        with store._tx() as cur:
            cur.execute("INSERT INTO episodes (run_id, name, task_id, pattern, agent, mitigation, end_reason, steps, dir) "
                        "VALUES (?, 'lost', 'lost', 'contextual', 'a', 'none', 'done', 1, 'x')", (store.run_id,))
            os.kill(os.getpid(), signal.SIGKILL)
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    conn = sqlite3.connect(tmp_path / "results.sqlite")
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert [r[0] for r in conn.execute("SELECT name FROM episodes")] == ["kept__a__none"]


def _descendants(pid: int) -> set[int]:
    out = subprocess.run(["ps", "-eo", "pid=,ppid="], capture_output=True, text=True).stdout
    children: dict[int, list[int]] = {}
    for line in out.splitlines():
        child, parent = (int(x) for x in line.split())
        children.setdefault(parent, []).append(child)
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def _alive(pids: set[int]) -> set[int]:
    alive = set()
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, IndexError):
            continue
        if state != "Z":  # a zombie is already dead, waiting for init to reap it
            alive.add(pid)
    return alive


def _rows(run_dir: Path) -> dict[str, tuple]:
    conn = sqlite3.connect(f"file:{run_dir / 'results.sqlite'}?mode=ro", uri=True, timeout=10)
    try:
        return {r[0]: r[1:] for r in conn.execute("SELECT name, episode_id, finished, end_reason FROM episodes")}
    except sqlite3.OperationalError:
        return {}  # the run has not created its tables yet
    finally:
        conn.close()


@needs_desktop
def test_resume_after_sigkill(tmp_path):
    run_dir = tmp_path / "run"
    cmd = [sys.executable, "-m", "blindact", "run", "--agent", "scripted:bgd", "--tasks", "pilot-*",
           "--run-dir", str(run_dir)]
    names = [f"{t}__scripted-bgd__none" for t in ("pilot-ambiguity-cleanup-script", "pilot-contextual-threat-comment",
                                                   "pilot-contradiction-public-to-protect")]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    killed_during = None
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and proc.poll() is None:
            rows = _rows(run_dir) if (run_dir / "results.sqlite").exists() else {}
            if len(rows) == 1:
                # kill while the second episode is under way (its row and folder are written when it ends)
                time.sleep(1.5)
                desktop_pids = _descendants(proc.pid)
                os.kill(proc.pid, signal.SIGKILL)
                killed_during = sorted(set(names) - set(_rows(run_dir)))[0]
                break
            time.sleep(0.05)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    out = proc.stdout.read()
    assert killed_during is not None, f"the run ended before it could be killed:\n{out}"
    assert proc.returncode == -signal.SIGKILL
    before = _rows(run_dir)
    assert 1 <= len(before) < 3 and killed_during not in before

    # the killed run's desktop processes must die with it, not linger and hold memory
    deadline = time.monotonic() + 15
    while _alive(desktop_pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _alive(desktop_pids), f"desktop processes outlived the killed run: {sorted(_alive(desktop_pids))}"
    resumed = subprocess.run([sys.executable, "-m", "blindact", "run", "--resume", str(run_dir)],
                             capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    after = _rows(run_dir)
    assert len(after) == 3
    for name, row in before.items():
        assert after[name] == row, f"{name} was redone on resume"
    # finished by the agent (the oracle's own ending may vary with the machine's load), not by a crash
    assert after[killed_during][2] in ("done", "fail", "ask_user", "max_steps"), after[killed_during]
    episode = run_dir / "episodes" / killed_during
    assert (episode / "result.json").exists() and (episode / "step_000.png").exists()
    with open_store(run_dir) as store:
        assert store.run()["status"] == "finished"
        steps = store.steps(after[killed_during][0])
    assert steps[0]["step"] == 0 and all(s["screenshot"] for s in steps)
    assert len(steps) == json.loads((episode / "result.json").read_text())["steps"] + 1


def test_an_episode_that_cannot_be_stored_leaves_no_folder_and_the_run_goes_on(tmp_path):
    """A write the database refuses (here: a trigger, standing in for a full disk or a locked file) leaves
    neither a folder without its row nor a row without its folder; run_suite reports it for that episode
    only, and a later episode is stored as usual. A lone surrogate in a thought is stored escaped."""
    from blindact.run.suite import _recorded

    bad, good = EpisodeSpec(_task("t-bad"), "scripted:bgd"), EpisodeSpec(_task("t-good"), "scripted:bgd")
    with Store(tmp_path) as store:
        store.begin_run(SuiteOptions().config([bad, good]), [bad.task, good.task])
        store.conn.execute("CREATE TRIGGER refuse BEFORE INSERT ON episodes WHEN NEW.task_id = 't-bad' "
                           "BEGIN SELECT RAISE(ABORT, 'disk full'); END")
        result = _recorded(store, bad, EpisodeResult(End.DONE, 2, {"harm": True, "benign": False},
                                                     trajectory=_trajectory("t-bad")), "local")
        assert result.end == End.INTERRUPTED and "could not be stored" in result.error and "disk full" in result.error
        assert not (tmp_path / "episodes" / bad.name).exists()
        assert not list((tmp_path / "episodes").glob("*.writing"))
        cut = _trajectory("t-good")
        cut.steps[1].thought = "a reply cut mid-emoji \ud83d"
        stored = _recorded(store, good, EpisodeResult(End.DONE, 2, {"harm": False, "benign": True}, trajectory=cut), "local")
        assert stored.end == End.DONE
        row = next(r for r in store.episodes() if r["name"] == good.name)
        assert store.steps(row["episode_id"])[1]["thought"] == "a reply cut mid-emoji \\ud83d"
        assert bad.name not in store.completed_names()  # resume plays it again


def test_a_tasks_digest_follows_what_its_episodes_play_not_its_bookkeeping():
    """Tagging a task (its scenario triple, where its contradiction is seen) leaves its digest, and so every run
    and reference replay of it, as it was; a change to what it plays or how it is judged does not."""
    from blindact.run.store import task_digest
    from blindact.tasks import load_all

    task = next(t for t in load_all().values() if t.found_on_desktop is not None)
    base = task_digest(task)
    retagged = task.model_copy(update={"scenario": task.scenario.model_copy(update={"data": "schedule"}),
                                       "found_on_desktop": None})
    assert task_digest(retagged) == base
    assert task_digest(task.model_copy(update={"instruction": task.instruction + " Thanks."})) != base
    assert task_digest(task.model_copy(update={"judge_explanation": task.judge_explanation + " More."})) != base
