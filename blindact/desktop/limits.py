"""Resource limits for the agent's processes on the local provider: memory, processes, disk.

A memory bomb, a fork bomb or a disk bomb started from the agent's terminal must hit a wall within
seconds and end as one recorded episode, never slow the host or the next episode. Docker gives a
container these limits; on this machine they come from:

- a control group (memory and pids), v1 or v2, made under the runner's own group, which every process
  of the agent joins before it runs (so a double fork cannot leave it);
- a tmpfs of fixed size holding the desktop's folders (home, runtime and temp folders, app state,
  logs), so a full disk is the desktop's ENOSPC, not the host's;
- rlimits as the floor where neither can be made (a runner that is not root): the file size
  (RLIMIT_FSIZE) and, when the agent has a uid of its own, its number of processes (RLIMIT_NPROC).

`describe()` says which of these hold; it is recorded with every episode (the sandbox kind).
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import uuid
from dataclasses import dataclass, field
from pathlib import Path

GiB = 1 << 30


@dataclass(frozen=True)
class Limits:
    memory_bytes: int = 3 * GiB  # every process of the agent together (its apps, the browser included)
    pids: int = 1024
    disk_bytes: int = 2 * GiB  # the desktop's folders
    file_bytes: int = 1 * GiB  # one file


def _cgroup_paths() -> dict[str, str]:
    """controller (or "" for v2) -> this process's cgroup path, from /proc/self/cgroup."""
    out = {}
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            for c in controllers.split(",") if controllers else [""]:
                out[c] = path
    except OSError:
        pass
    return out


def _mounts() -> list[tuple[str, str, str]]:
    """(mount point, fs type, super options) of every mount, from /proc/self/mountinfo."""
    out = []
    try:
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            left, _, right = line.partition(" - ")
            fstype, _, opts = right.split(" ", 2)
            out.append((left.split()[4], fstype, opts))
    except (OSError, ValueError):
        pass
    return out


@dataclass
class ControlGroup:
    """The agent's control group(s); `procs` are the cgroup.procs files a child writes itself into."""

    dirs: list[Path] = field(default_factory=list)
    procs: tuple[str, ...] = ()
    kind: str = ""

    def close(self) -> None:
        for d in self.dirs:
            kill_all(d)
            try:
                d.rmdir()
            except OSError:
                pass


def kill_all(cgroup_dir: Path) -> None:
    """SIGKILL every process still in a cgroup (a v2 group has cgroup.kill; v1 is read and killed)."""
    kill = cgroup_dir / "cgroup.kill"
    try:
        if kill.exists():
            kill.write_text("1")
            return
        for pid in (cgroup_dir / "cgroup.procs").read_text().split():
            try:
                os.kill(int(pid), 9)
            except (ProcessLookupError, ValueError):
                pass
    except OSError:
        pass


def make_cgroup(limits: Limits, label: str) -> ControlGroup | None:
    """A memory+pids control group under this process's own, or None where none can be made."""
    if os.geteuid() != 0:
        return None
    name = f"blindact-{label}-{uuid.uuid4().hex[:8]}"
    paths = _cgroup_paths()
    mounts = _mounts()
    v1 = {}
    for point, fstype, opts in mounts:
        if fstype == "cgroup":
            for c in ("memory", "pids"):
                if c in opts.split(","):
                    v1[c] = point
    if "memory" in v1 and "pids" in v1 and "memory" in paths and "pids" in paths:
        group = ControlGroup(kind="cgroup-v1")
        try:
            for c, setting, value in (("memory", "memory.limit_in_bytes", limits.memory_bytes),
                                      ("pids", "pids.max", limits.pids)):
                d = Path(v1[c] + paths[c].rstrip("/")) / name
                d.mkdir()
                group.dirs.append(d)
                (d / setting).write_text(str(value))
            group.procs = tuple(str(d / "cgroup.procs") for d in group.dirs)
            return group
        except OSError:
            group.close()
            return None
    v2 = next((point for point, fstype, _ in mounts if fstype == "cgroup2"), None)
    if v2 is not None and "" in paths:
        parent = Path(v2 + paths[""].rstrip("/"))
        d = parent / name
        try:
            enabled = (parent / "cgroup.subtree_control").read_text().split()
            if not {"memory", "pids"} <= set(enabled):
                return None  # the runner's group does not hand these controllers down (systemd's choice)
            d.mkdir()
            (d / "memory.max").write_text(str(limits.memory_bytes))
            (d / "memory.swap.max").write_text("0") if (d / "memory.swap.max").exists() else None
            (d / "pids.max").write_text(str(limits.pids))
            return ControlGroup([d], (str(d / "cgroup.procs"),), "cgroup-v2")
        except OSError:
            try:
                d.rmdir()
            except OSError:
                pass
            return None
    return None


def mount_tmpfs(root: Path, size: int) -> bool:
    """Put a tmpfs of `size` bytes on `root` (an empty folder); False where this process cannot mount."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        return False
    result = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0711,nodev,nosuid",
                             "blindact-desktop", str(root)], capture_output=True, timeout=10)
    return result.returncode == 0


def unmount(root: Path) -> None:
    if os.path.ismount(root):
        subprocess.run(["umount", "-l", str(root)], capture_output=True, timeout=10)


def rlimits(limits: Limits, own_uid: bool) -> tuple[tuple[int, int, int], ...]:
    out = [(resource.RLIMIT_FSIZE, limits.file_bytes, limits.file_bytes), (resource.RLIMIT_CORE, 0, 0)]
    if own_uid:
        # counted per real uid: with a uid of its own, exactly the agent's processes
        out.append((resource.RLIMIT_NPROC, limits.pids, limits.pids))
    return tuple(out)


def describe(limits: Limits, cgroup: ControlGroup | None, tmpfs: bool, own_uid: bool) -> str:
    parts = []
    if cgroup is not None:
        parts.append(f"{cgroup.kind} memory {limits.memory_bytes // (1 << 20)} MiB, pids {limits.pids}")
    elif own_uid:
        parts.append(f"rlimit nproc {limits.pids}")
    parts.append(f"disk {limits.disk_bytes // (1 << 20)} MiB tmpfs" if tmpfs else "disk unlimited")
    parts.append(f"file {limits.file_bytes // (1 << 20)} MiB")
    return "; ".join(parts)
