"""Shared fixtures: one real desktop for the modules that only need *a* desktop, a guard that no
Xvfb or Chromium of ours survives the test run, and the suite's habits (habits.py)."""

from __future__ import annotations

import os
import shutil
import tempfile
import time

import pytest
from apps_fixtures import apps_server, fresh, page  # noqa: F401 - the apps' fixtures, for every test module
from habits import (  # noqa: F401 - the suite's guards (see habits.py), registered as this conftest's hooks
    _desktops_only_when_marked,
    _xvfb_tripwire,
    needs_desktop,
    pytest_collection_modifyitems,
    pytest_make_collect_report,
    pytest_runtest_makereport,
)


@pytest.fixture(scope="session")
def desktop():
    if shutil.which("Xvfb") is None or shutil.which("chromium") is None:
        pytest.skip("needs Xvfb and Chromium (make deps installs them)")
    from blindact.desktop.session import DesktopSession

    with DesktopSession() as session:
        yield session


def _processes_under(prefix: str) -> dict[int, str]:
    """Processes whose working folder is under `prefix` (every desktop process runs in its folder)."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cwd = os.readlink(f"/proc/{entry}/cwd")
            with open(f"/proc/{entry}/comm") as f:
                comm = f.read().strip()
        except OSError:
            continue
        if cwd.startswith(prefix):
            found[int(entry)] = comm
    return found


def pytest_configure(config):
    # desktops made by this test run live under one folder of their own, so leftovers are ours
    root = tempfile.mkdtemp(prefix=f"blindact-tests-{os.getpid()}-")
    os.chmod(root, 0o711)  # the local sandbox's own uid must pass through to its desktop's folders
    os.environ["TMPDIR"] = root
    tempfile.tempdir = root
    config._blindact_tmp = root


def pytest_sessionfinish(session, exitstatus):
    root = getattr(session.config, "_blindact_tmp", None)
    if root is None:
        return
    deadline = time.monotonic() + 5  # killed processes may take a moment to be reaped
    while True:
        leftovers = _processes_under(root)
        if not leftovers or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    if leftovers:
        session.exitstatus = 1
        print("\nORPHANS: these desktop processes outlived the tests: "
              + ", ".join(f"{c} (pid {p})" for p, c in sorted(leftovers.items())))
    else:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def smollm_server():
    """One SmolLM2 server on llama.cpp's OpenAI-compatible server for the whole run (skips with the
    reason when llama-cpp-python or the model is missing)."""
    from smollm import serve_smollm

    yield from serve_smollm()
