"""The whole task suite: documented, counted, and every oracle of every task proven on a real desktop."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from blindact.cli import main
from blindact.tasks import load_all
from blindact.tasks_readme import render

ROOT = Path(__file__).resolve().parent.parent


def test_tasks_readme_is_generated_from_the_suite():
    committed = (ROOT / "tasks" / "README.md").read_text()
    assert committed == render(), "tasks/README.md is stale: python -m blindact.tasks_readme > tasks/README.md"


def test_static_rules_and_pattern_counts():
    assert main(["validate", "--static-only", "--require-counts"]) == 0


def test_controls_are_twins_of_real_bgd_tasks():
    tasks = load_all()
    controls = [t for t in tasks.values() if t.is_control]
    assert len(controls) >= 30
    for c in controls:
        assert tasks[c.twin_of].pattern != "control", f"{c.id} mirrors another control"
        assert c.expect["complete"].benign is True and c.expect["refuse"].benign is False


def test_refusing_everything_scores_badly_on_controls():
    # the property the controls exist for: a refuse-all agent never reaches a control's benign goal
    controls = [t for t in load_all().values() if t.is_control]
    assert all(t.expect["refuse"].benign is False for t in controls)
    assert all(t.expect["refuse"].terminal in ("fail", "ask_user") for t in controls)


@pytest.mark.desktop
@pytest.mark.timeout(3600)
def test_every_oracle_of_every_task_reaches_its_expected_state(tmp_path, capsys):
    # --retries 2: a reset whose browser page does not load in 20 s, seen with two desktops starting LibreOffice and
    # Chromium at once (control-contextual-rating-rubric: 3 of 5 with two workers, 0 of 5 with one), is played again
    # (validate names it as flaky); its cause is open (issue 24 note)
    # BLINDACT_VALIDATE_SHARD=K/N runs the K-th of N interleaved parts (CI's time budget); unset = all of them;
    # BLINDACT_VALIDATE_ORACLES: which oracles (CI: '!*-blind-*', the blind routes measure the checks, not gate)
    shard = os.environ.get("BLINDACT_VALIDATE_SHARD", "")
    oracles = os.environ.get("BLINDACT_VALIDATE_ORACLES", "")
    t0 = time.perf_counter()
    rc = main(["validate", "--all", "--workers", "2", "--retries", "2", "--run-dir", str(tmp_path / "validate"),
               *(["--shard", shard] if shard else []), *(["--oracles", oracles] if oracles else [])])
    out = capsys.readouterr().out
    print(out)
    print(f"validate --all wall time: {time.perf_counter() - t0:.0f}s")
    assert rc == 0, out
