"""Child processes that cannot outlive us: started with PR_SET_PDEATHSIG and stopped as a group.

The kernel sends the parent-death signal when the *thread* that forked the child ends, not the process.
So every child is forked from one thread that lives as long as the process (`popen`): a desktop started
from a short-lived thread (a caller's worker, an agent's turn, an inspect_ai sample) keeps its processes
when that thread ends.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import queue
import signal
import subprocess
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path

_PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL(None, use_errno=True)


def _die_with_parent() -> None:
    # Runs in the child between fork and exec: the kernel SIGKILLs it when we die, even by SIGKILL,
    # so no Xvfb or Chromium is orphaned. (It tracks the forking thread: see `popen`.)
    _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    os.setpgrp()


class _Spawner:
    """One daemon thread that forks every child (see the module doc); made again in a forked child of ours,
    where the thread does not exist."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pid = -1
        self._thread: threading.Thread | None = None
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()

    def _loop(self, jobs: queue.SimpleQueue) -> None:
        while True:
            future, args, kwargs = jobs.get()
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(subprocess.Popen(*args, **kwargs))
                except BaseException as exc:  # noqa: BLE001 - handed to the caller, raised there
                    future.set_exception(exc)

    def popen(self, *args, **kwargs) -> subprocess.Popen:
        with self._lock:
            if self._pid != os.getpid():
                self._jobs = queue.SimpleQueue()
                self._thread = threading.Thread(target=self._loop, args=(self._jobs,), name="blindact-spawner",
                                                daemon=True)
                self._thread.start()
                self._pid = os.getpid()
        if threading.current_thread() is self._thread:
            return subprocess.Popen(*args, **kwargs)
        future: Future = Future()
        self._jobs.put((future, args, kwargs))
        return future.result()


_spawner = _Spawner()


def popen(*args, **kwargs) -> subprocess.Popen:
    """`subprocess.Popen`, forked from the one spawner thread: use it for every child that gets the
    parent-death signal (`_die_with_parent`, `Confinement.apply`)."""
    return _spawner.popen(*args, **kwargs)


@dataclass(frozen=True)
class Confinement:
    """What a child of the agent's gets between fork and exec, in this order: moved into control groups
    (`cgroup_procs`: their cgroup.procs files, written while still root), resource limits (`rlimits`:
    resource -> (soft, hard)), then the user switch (`user`: uid, gid, no supplementary groups), then
    the parent-death signal (a change of credentials clears it, so it comes last)."""

    user: tuple[int, int] | None = None
    cgroup_procs: tuple[str, ...] = ()
    rlimits: tuple[tuple[int, int, int], ...] = ()

    def apply(self) -> None:
        os.setpgrp()
        pid = str(os.getpid()).encode()
        for path in self.cgroup_procs:
            fd = os.open(path, os.O_WRONLY)
            try:
                os.write(fd, pid)
            finally:
                os.close(fd)
        import resource

        for which, soft, hard in self.rlimits:
            resource.setrlimit(which, (soft, hard))
        if self.user is not None:
            uid, gid = self.user
            os.setgroups([])
            os.setresgid(gid, gid, gid)
            os.setresuid(uid, uid, uid)
        _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


@dataclass
class Proc:
    name: str
    popen: subprocess.Popen
    log_path: Path

    @property
    def alive(self) -> bool:
        return self.popen.poll() is None

    def log_tail(self, lines: int = 15) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def stop(self, timeout: float = 2.0) -> None:
        if self.popen.poll() is not None:
            return
        try:
            os.killpg(self.popen.pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        try:
            self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(self.popen.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.popen.wait(timeout)


def spawn(name: str, argv: list[str], env: dict[str, str], log_dir: Path, cwd: Path | None = None,
          pass_fds: tuple[int, ...] = (), fd_map: dict[int, int] | None = None,
          confine: Confinement | None = None) -> Proc:
    """Start a child tied to our life. `fd_map` {child fd: our fd} hands pipes to programs that
    expect them at fixed numbers (Chromium's DevTools pipe is fds 3 and 4). `confine`: limits and
    another user for it (switching user needs CAP_SETUID and CAP_SETGID)."""
    log_path = log_dir / f"{name}.log"
    high: dict[int, int] = {}
    if fd_map:
        # copies far above the targets, so a source that is itself 3 or 4 cannot be clobbered
        high = {dst: fcntl.fcntl(src, fcntl.F_DUPFD_CLOEXEC, 100) for dst, src in fd_map.items()}
        moves = " ".join(f"{dst}<&{src}" for dst, src in high.items())
        closes = " ".join(f"{src}<&-" for src in high.values())
        argv = ["/bin/bash", "-c", f'exec {moves} {closes}; exec "$@"', "bash", *argv]
        pass_fds = (*pass_fds, *high.values())
    with open(log_path, "ab") as log:
        child = popen(
            argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            preexec_fn=confine.apply if confine is not None else _die_with_parent, pass_fds=pass_fds,
            close_fds=True,
        )
    for fd in high.values():
        os.close(fd)
    return Proc(name, child, log_path)


def wait_for(predicate, timeout: float, what: str, proc: Proc | None = None, interval: float = 0.01):
    """Poll until predicate() is truthy; raise TimeoutError naming `what` (with the log tail)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if proc is not None and not proc.alive:
            raise RuntimeError(f"{proc.name} exited (code {proc.popen.returncode}) while waiting for {what}:\n"
                               f"{proc.log_tail()}")
        if time.monotonic() > deadline:
            tail = f"\n{proc.name} log:\n{proc.log_tail()}" if proc else ""
            raise TimeoutError(f"timed out after {timeout:.1f}s waiting for {what}{tail}")
        time.sleep(interval)
