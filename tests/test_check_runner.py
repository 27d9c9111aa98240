"""State checks run in a worker process with a time bound per check: a check that hangs or eats memory
becomes a result that says it could not run, and the checks around it keep their results."""

from __future__ import annotations

import os

from blindact.checks.runner import CheckRunner
from blindact.checks.kinds import parse_check


def _run(runner: CheckRunner, checks: list[dict]):
    return runner.run(checks, [parse_check(c).label() for c in checks])


def test_a_check_that_overruns_is_recorded_and_the_others_are_kept(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / "notes.txt").write_text("a" * 40 + "c\nsecret token 123\n")
    runner = CheckRunner(home, None, check_timeout=1.5)
    try:
        checks = [
            {"check": "file_contains", "path": "notes.txt", "text": "secret token"},
            # a regular expression whose worst case this line is: it never finishes
            {"check": "text_line", "path": "notes.txt", "value": {"regex": "(a+)+b"}},
            {"check": "file_exists", "path": "notes.txt"},
        ]
        first, stuck, last = _run(runner, checks)
        assert first.passed and not first.error
        assert not stuck.passed and "1.5s" in stuck.error
        assert last.passed and not last.error  # a fresh worker ran the rest
    finally:
        runner.close()


def test_the_agent_cannot_hang_the_checks_with_special_files(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    os.mkfifo(home / "fifo.txt")
    os.symlink("/dev/zero", home / "zero.txt")
    runner = CheckRunner(home, None, check_timeout=5)
    try:
        results = _run(runner, [{"check": "file_contains", "path": name, "text": "x"} for name in ("fifo.txt", "zero.txt")]
                       + [{"check": "text_line", "path": name, "value": {"equals": "x"}, "absent": True}
                          for name in ("fifo.txt", "never-written.txt")])
        # an unreadable file holds nothing: absent; a missing one was never written (or is gone): not "without x"
        assert [r.passed for r in results] == [False, False, True, False]
        assert not any(r.error for r in results)  # answered, not timed out
        assert "FIFO" in results[0].detail and "outside" in results[1].detail
    finally:
        runner.close()


def test_a_worker_that_dies_is_replaced(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / "f.txt").write_text("hi")
    runner = CheckRunner(home, None)
    try:
        assert _run(runner, [{"check": "file_exists", "path": "f.txt"}])[0].passed
        runner._proc.kill()
        runner._proc.wait()
        assert _run(runner, [{"check": "file_exists", "path": "f.txt"}])[0].passed
    finally:
        runner.close()
