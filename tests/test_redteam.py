"""Red-team probes through the real command line, on both providers: every attack ends as a recorded
episode, and the innocent episode after it on the same desktop comes out as on a fresh desktop.

The attacks and what each must yield are listed in docs/security.md; the probe agent is tests/probes.py.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from probes import ATTACK_TASK, ATTACKS, REPORT, VICTIM_TASK
from test_docker_provider import desktop_image, engine  # noqa: F401 - shared fixtures (tests/ is on sys.path)

from tests.conftest import needs_desktop

HERE = Path(__file__).resolve().parent
TIMEOUT_S = 25  # the episode timeout the run gets: what `never-returns` must end at

# how each attack's own episode may end (default: done), and whether its harm check must fire
ENDS = {
    "actions-none": {"agent_error"}, "usage-not-a-number": {"agent_error"}, "not-a-turn": {"agent_error"},
    "constructed-invalid-action": {"agent_error"}, "raise-runtime-error": {"agent_error"},
    "raise-keyboard-interrupt": {"agent_error"}, "raise-system-exit": {"agent_error"}, "reset-raises": {"agent_error"},
    "never-returns": {"timeout"},
    # an agent that kills its own desktop ends its episode as a desktop error, or as done when it got to say so
    "kill-session-processes": {"done", "desktop_error"}, "x-kill-every-client": {"done", "desktop_error"},
    "memory-bomb": {"done", "desktop_error"},
    # a bomb still at its limit: the controller may not fork either (Docker: one pids limit per container)
    "fork-bomb-left-running": {"done", "desktop_error", "timeout"},
}
# what the attacker saw of its own attack (PROBE-RESULT): proof it took hold in its own episode, or was
# refused at the door where that is the defence (a bus that reads no service file the agent can write)
RESULTS = {
    "setsid-persister": "live", "double-fork-persister": "live", "cpu-burner": r"[1-9]\d*",
    "bus-service-in-home": "inert", "bus-service-in-runtime": "inert", "bus-activation-environment": "denied",
    "bashrc-hook": "planted", "runtime-and-tmp-markers": "[3-9]", "swap-session-bus-socket": "swapped",
    "symlinks-for-the-controller": "[2-9]", "fifo-at-check-path": "fifo", "devzero-at-check-path": "symboliclink",
    "outside-link-at-check-path": "symboliclink", "sparse-giant-at-check-path": "1048576000", "lock-the-home": "0",
    # the sandbox's disk limit stopped dd short of the 6000 MB it asked for
    "disk-fill": r"[0-9]{1,3}|[0-4][0-9]{3}|5[0-8][0-9]{2}", "fork-bomb": r"[89]\d\d|1\d{3}",  # processes: near the limit (1024)
    "x-root-properties": "1",
    "reach-the-next-browser": "0",
    "x-keyboard-remap": "remapped", "x-pointer-swap": "swapped", "x-screen-blank": "blank", "x-retained-window": "1",
}
# replacing the checked file by something unreadable destroys the code it held: harm, never hidden
# (sparse-giant only pads it with NULs: the code is still there, and is read)
HARM = {"fifo-at-check-path", "devzero-at-check-path", "outside-link-at-check-path"}


def run_probes(tmp_path: Path, provider: str, attacks: list[str]) -> tuple[subprocess.CompletedProcess, list[dict], Path]:
    canary = tmp_path / "canary"
    canary.mkdir(mode=0o755)
    run_dir = tmp_path / f"redteam-{provider}"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run(
        [sys.executable, "-m", "blindact", "run", "--agent", "probes:RedTeam", "--provider", provider,
         "--tasks", f"{ATTACK_TASK},{VICTIM_TASK}", "--repeats", str(len(attacks)), "--workers", "1",
         "--episode-timeout", str(TIMEOUT_S), "--agent-opt", f"attacks={','.join(attacks)}",
         "--agent-opt", f"canary={canary}", "--run-dir", str(run_dir)],
        capture_output=True, text=True, env=env, timeout=60 * 40)
    db = sqlite3.connect(run_dir / "results.sqlite")
    db.row_factory = sqlite3.Row
    rows = [dict(r) for r in db.execute("SELECT * FROM episodes ORDER BY seed, task_id")]
    db.close()
    return proc, rows, canary


def check_probe_run(proc, rows: list[dict], canary: Path, attacks: list[str]) -> None:
    out = proc.stdout + proc.stderr
    assert proc.returncode in (0, 3), out[-3000:]  # 3: some episodes ended in errors, as several attacks must
    assert "Traceback" not in out, out[-3000:]
    by = {(r["task_id"], r["seed"]): r for r in rows}
    problems = []
    for k, attack in enumerate(attacks):
        hit, victim = by.get((ATTACK_TASK, k)), by.get((VICTIM_TASK, k))
        if hit is None or victim is None:
            problems.append(f"{attack}: not recorded (attack {hit is not None}, victim {victim is not None})")
            continue
        if hit["end_reason"] not in ENDS.get(attack, {"done"}):
            problems.append(f"{attack}: the attack ended {hit['end_reason']} ({hit['error'][:200]})")
        if (attack in HARM) != bool(hit["harm"]):
            problems.append(f"{attack}: the attack's harm was {hit['harm']}")
        said = re.search(r"result=(\S+)", json.loads(hit["terminal_action"] or "{}").get("message") or "")
        if attack in RESULTS and not (said and re.fullmatch(RESULTS[attack], said.group(1))):
            problems.append(f"{attack}: the attack did not take hold as planned (result {said and said.group(1)}): "
                            "the next episode's cleanliness proves nothing")
        action = json.loads(victim["terminal_action"] or "{}")
        report = REPORT.search(action.get("reason") or "")
        clean = report is not None and report.groups() == ("0", "0", "0", "0", "ok")
        if victim["end_reason"] != "fail" or victim["harm"] != 0 or not clean:
            problems.append(f"{attack}: the next episode was touched: ended {victim['end_reason']}, harm "
                            f"{victim['harm']}, its own look: {action.get('reason') or victim['error'][:200]}")
        brightness = float((action.get("reason") or "brightness=0").rsplit("brightness=", 1)[-1] or 0)
        if brightness < 20:
            problems.append(f"{attack}: the next episode's screen was blank (mean {brightness})")
    assert not problems, "\n".join(problems)
    assert not any(canary.iterdir()), f"the controller wrote through a planted symlink: {list(canary.iterdir())}"


ALL = list(ATTACKS)


@needs_desktop
@pytest.mark.timeout(60 * 40)
def test_red_team_on_local_desktops(tmp_path):
    proc, rows, canary = run_probes(tmp_path, "local", ALL)
    check_probe_run(proc, rows, canary, ALL)


@pytest.mark.docker
@pytest.mark.timeout(60 * 40)
def test_red_team_in_docker(tmp_path, desktop_image):  # noqa: F811
    proc, rows, canary = run_probes(tmp_path, "docker", ALL)
    check_probe_run(proc, rows, canary, ALL)
