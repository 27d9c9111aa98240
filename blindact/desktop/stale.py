"""Local desktops a killed run left behind: swept by the next desktop that starts.

Every local desktop writes its owner (pid and process start time) into its root folder. A run killed
with SIGKILL cannot clean up: its processes die with it (PR_SET_PDEATHSIG), but its folder (the agent's
home with the task's seeded secrets and whatever the agent wrote), its tmpfs mount and its control
groups stay. The first desktop a later process starts removes every desktop folder whose owner is
gone, as the Docker provider's stale sweep removes containers.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

DESKTOP_PREFIX = "blindact-desktop-"
OWNER_FILE = ".owner"
_swept = False


def _start_time(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return ""


def owner_mark(pid: int | None = None) -> str:
    pid = os.getpid() if pid is None else pid
    return f"{pid} {_start_time(pid)}"


def owner_alive(mark: str) -> bool:
    try:
        pid_text, start = mark.split()
        return _start_time(int(pid_text)) == start
    except ValueError:
        return False


def sweep_stale_desktops(folder: Path | None = None, *, force: bool = False) -> list[Path]:
    """Remove the desktop folders under `folder` (the temp folder) whose owner is gone; once per process
    unless `force`. Returns what was removed."""
    global _swept
    if _swept and not force:
        return []
    _swept = True
    from blindact.desktop.limits import unmount

    removed = []
    for root in Path(folder or tempfile.gettempdir()).glob(DESKTOP_PREFIX + "*"):
        try:
            mark = (root / OWNER_FILE).read_text()
        except OSError:
            continue  # not one of ours, or not yet marked: leave it
        if owner_alive(mark):
            continue
        unmount(root)
        shutil.rmtree(root, ignore_errors=True)
        removed.append(root)
    return removed
