"""Pytest hooks that keep the test suite honest (conftest.py loads them; test_habits.py plants a
violation of each in a scratch test folder and shows it is caught):

- under BLINDACT_REQUIRE_ALL=1 (`make test`, CI) every skip fails, wherever it happens: in a test's
  setup or body, or for a whole module at collection (`pytest.importorskip` at the top of a file);
  a green run must mean every test ran
- a test that starts a real desktop carries the `desktop` (or `docker`) marker, so `make check`
  (`-m "not desktop and not docker ..."`) leaves it out: a test that asks for a desktop fixture without
  the marker stops the run at collection; `needs_desktop` marks the tests that start their desktops
  themselves (a run, a CLI in a subprocess, Ray workers); and an unmarked test that starts Xvfb all
  the same (in this process, a subprocess or a Ray worker: they inherit PATH) finds a tripwire there
  and fails, naming itself
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

REQUIRE_ALL = "BLINDACT_REQUIRE_ALL"

# fixtures that start a real desktop, directly or through the fixtures they use
DESKTOP_FIXTURES = frozenset({"desktop", "docker_desktop", "local_desktop"})
DESKTOP_MARKERS = ("desktop", "docker")

_skip_without_desktop = pytest.mark.skipif(
    shutil.which("Xvfb") is None or shutil.which("chromium") is None,
    reason="needs Xvfb and Chromium (make deps installs them)",
)


def needs_desktop(test):
    """For a test that starts real desktops itself: marked `desktop` and skipped without Xvfb and
    Chromium."""
    return pytest.mark.desktop(_skip_without_desktop(test))


def _strict() -> bool:
    return os.environ.get(REQUIRE_ALL) == "1"


def _fail_the_skip(report, what: str) -> None:
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    report.outcome = "failed"
    report.longrepr = f"{what} skipped, but {REQUIRE_ALL}=1 requires every test to run: {reason}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A test skipped in its setup (a fixture, a skipif mark) or its body fails under REQUIRE_ALL."""
    report = (yield).get_result()
    if _strict() and report.skipped and not hasattr(report, "wasxfail"):
        _fail_the_skip(report, "test")


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    """A module skipped while it is collected (its tests never exist, so the hook above never sees
    them) fails under REQUIRE_ALL: a collection error, which stops the run before any test."""
    report = (yield).get_result()
    if _strict() and report.skipped:
        _fail_the_skip(report, f"{collector.nodeid or 'collection'}:")


def pytest_collection_modifyitems(config, items):
    unmarked = [item.nodeid for item in items
                if DESKTOP_FIXTURES & set(getattr(item, "fixturenames", ()))
                and not any(item.get_closest_marker(m) for m in DESKTOP_MARKERS)]
    if unmarked:
        raise pytest.UsageError(
            "these tests start a real desktop (they use a desktop fixture) but are not marked "
            "@pytest.mark.desktop (or docker), so `make check` would run them: " + ", ".join(unmarked))


_TRIPWIRE = """#!/bin/sh
echo "$PYTEST_CURRENT_TEST" >> "{log}"
echo "blindact tests: Xvfb refused: this test is not marked desktop ({log})" >&2
exit 1
"""


@pytest.fixture(scope="session")
def _xvfb_tripwire(tmp_path_factory) -> Path:
    """A folder whose `Xvfb` records the test that ran it and fails."""
    folder = tmp_path_factory.mktemp("xvfb-tripwire")
    script = folder / "Xvfb"
    script.write_text(_TRIPWIRE.format(log=folder / "started.log"))
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return folder


@pytest.fixture(autouse=True)
def _desktops_only_when_marked(request, monkeypatch):
    if any(request.node.get_closest_marker(m) for m in DESKTOP_MARKERS):
        yield
        return
    folder = request.getfixturevalue("_xvfb_tripwire")
    log = folder / "started.log"
    before = log.stat().st_size if log.exists() else 0
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ.get('PATH', '')}")
    yield
    if log.exists() and log.stat().st_size > before:
        pytest.fail(f"{request.node.nodeid} started a desktop (Xvfb) but is not marked desktop: add "
                    "@pytest.mark.desktop, or `needs_desktop` from conftest, so `make check` leaves it out",
                    pytrace=False)
