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

from blindact.runner import EpisodeResult, EpisodeSpec, suite_config
from blindact.store import Store, StoreError, open_store, state_over_refusal
from tests.conftest import needs_desktop


def _fake_episode(run_dir: Path, spec: EpisodeSpec, steps: int = 2) -> None:
    folder = run_dir / "episodes" / spec.name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "episode.json").write_text(json.dumps({"task_id": spec.task_id, "started": 100.0}))
    lines = [{"step": i, "actions": [{"type": "wait", "seconds": 0}] if i else [], "thought": f"t{i}",
              "timing": {"execute_s": 0.01}, "usage": {"input_tokens": 5}} for i in range(steps + 1)]
    (folder / "steps.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    (folder / "result.json").write_text(json.dumps({"end": "done", "finished": 200.0,
                                                    "terminal_action": {"type": "done", "message": "ok"}}))


def test_record_replace_and_completed(tmp_path):
    spec = EpisodeSpec("t-one", "scripted:bgd")
    broken = EpisodeSpec("t-two", "scripted:bgd")
    _fake_episode(tmp_path, spec)
    with Store(tmp_path) as store:
        store.begin_run(suite_config([spec, broken], provider="local"))
        store.record_episode(spec, EpisodeResult("t-one", "x", "done", 2, {"harm": True, "benign": False},
                                                 usage={"input_tokens": 10, "output_tokens": 3}), pattern="contextual")
        store.record_episode(broken, EpisodeResult("t-two", "x", "desktop_error", 0, error="Xvfb died"),
                             pattern="contextual")
        # an infrastructure failure is retried on resume; an episode the agent finished is not
        assert store.completed_names() == {spec.name}
        rows = {r["name"]: r for r in store.episodes()}
        assert rows[spec.name]["harm"] == 1 and rows[spec.name]["benign"] == 0
        assert rows[spec.name]["input_tokens"] == 10 and rows[spec.name]["started"] == 100.0
        assert [s["thought"] for s in store.steps(rows[spec.name]["episode_id"])] == ["t0", "t1", "t2"]
        # the same episode again replaces the row and its steps, never duplicates them
        store.record_episode(spec, EpisodeResult("t-one", "x", "fail", 1, {"harm": False, "benign": False}),
                             pattern="contextual")
        rows = {r["name"]: r for r in store.episodes()}
        assert len(rows) == 2 and rows[spec.name]["end_reason"] == "fail"
        count = store.conn.execute("SELECT COUNT(*) FROM steps").fetchone()[0]
        assert count == 3
        run = store.run()
        assert run["status"] == "running" and run["agents"] == ["scripted:bgd"]
        assert run["suite_version"].startswith("0t-")  # no task file of these made-up ids


def test_over_refusal_by_state():
    assert state_over_refusal("control", "fail", False) == 1
    assert state_over_refusal("control", "ask_user", False) == 1
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
        from blindact.runner import EpisodeResult, EpisodeSpec
        from blindact.store import Store
        store = Store({str(tmp_path)!r})
        store.begin_run({{"agents": ["a"], "episodes": []}})
        store.record_episode(EpisodeSpec("kept", "a"), EpisodeResult("kept", "a", "done", 1), pattern="contextual")
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
    cmd = [sys.executable, "-m", "blindact.cli", "run", "--agent", "scripted:bgd", "--tasks", "pilot-*",
           "--run-dir", str(run_dir)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    killed_during = None
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and proc.poll() is None:
            rows = _rows(run_dir) if (run_dir / "results.sqlite").exists() else {}
            if rows:
                # kill while the next episode is under way: its folder exists, its row does not
                in_progress = [p for p in (run_dir / "episodes").iterdir()
                               if p.name not in rows and (p / "episode.json").exists()]
                if in_progress:
                    desktop_pids = _descendants(proc.pid)
                    os.kill(proc.pid, signal.SIGKILL)
                    killed_during = in_progress[0].name
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
    resumed = subprocess.run([sys.executable, "-m", "blindact.cli", "run", "--resume", str(run_dir)],
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
