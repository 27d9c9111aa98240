"""Shared fixtures: one real desktop for the modules that only need *a* desktop, and a guard that
no Xvfb or Chromium of ours survives the test run."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

needs_desktop = pytest.mark.skipif(
    shutil.which("Xvfb") is None or shutil.which("chromium") is None,
    reason="needs Xvfb and Chromium (make deps installs them)",
)


@pytest.fixture(scope="session")
def desktop():
    if shutil.which("Xvfb") is None or shutil.which("chromium") is None:
        pytest.skip("needs Xvfb and Chromium (make deps installs them)")
    from blindact.desktop.session import DesktopSession

    with DesktopSession() as session:
        yield session


_WATCHED = ("Xvfb", "chromium", "xterm", "openbox", "bwrap", "dbus-daemon", "at-spi-bus-laun", "socat")


def desktop_processes() -> dict[int, str]:
    """pid -> command of every process of the kinds a desktop starts."""
    out = subprocess.run(["ps", "-eo", "pid=,comm="], capture_output=True, text=True).stdout
    procs = {}
    for line in out.splitlines():
        pid, _, comm = line.strip().partition(" ")
        if comm.strip().startswith(_WATCHED):
            procs[int(pid)] = comm.strip()
    return procs


_BEFORE: dict[int, str] = {}


def pytest_sessionstart(session):
    _BEFORE.update(desktop_processes())


def pytest_sessionfinish(session, exitstatus):
    import time

    deadline = time.monotonic() + 5  # killed processes may take a moment to be reaped
    while True:
        leftovers = {p: c for p, c in desktop_processes().items() if p not in _BEFORE}
        if not leftovers or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    if leftovers:
        session.exitstatus = 1
        print("\nORPHANS: these desktop processes outlived the tests: "
              + ", ".join(f"{c} (pid {p})" for p, c in sorted(leftovers.items())))
