"""Where an agent's apps run: a bubblewrap sandbox (local provider), or another user of the machine
(inside a desktop container, where bubblewrap cannot make its namespaces without extra privileges).

The bubblewrap sandbox sees the host's /usr and /etc read-only, its own HOME and runtime folders (bound at the
same absolute paths as on the host, so socket paths mean the same thing on both sides), the X
socket, and nothing else of the host: no /root, /home, /work, no host /tmp, no network but its own
loopback. Its processes run as uid 1000 in a user namespace and die with the desktop.

The uid sandbox runs the agent's apps as the unprivileged account `user`, while the controller and
the web apps run as root (with only the capabilities to switch user, stop that user's processes and
manage its files). The agent owns its home and runtime folders; the apps' state and the logs are
root's (0700), the project's code, tasks and labels too (the image keeps /opt/blindact 0700), and
the controller's socket folder belongs to the host user.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from blindact.desktop.base import DesktopError
from blindact.desktop.procs import Confinement, Proc, spawn

SANDBOX_UID = 1000
SANDBOX_USER = "user"


class SandboxUnavailable(DesktopError):
    """The sandbox the desktop needs cannot be made on this machine; the message says why and what to do."""


@dataclass
class SandboxLayout:
    """The folders of one desktop, under `root` (0711: the agent may pass through, never list it).

    The agent's own (its uid owns them, wiped at every reset): `home`, `run` (its XDG runtime folder)
    and `tmp` (its /tmp). The controller's: `conf` (files the agent's apps must read but never change:
    passwd, group, the browser policy, the window manager's and the session bus's settings; root-owned,
    bound read-only), `ctl` (what only the controller touches: the web apps' socket), `state` (the apps'
    state) and `logs`. `private`: folders each of one program of the agent's uid (a browser's profile), under
    random names, bound into that program's sandbox only (`Sandbox.spawn(private=...)`)."""

    root: Path
    home: Path = field(init=False)
    run: Path = field(init=False)
    tmp: Path = field(init=False)
    conf: Path = field(init=False)
    ctl: Path = field(init=False)
    state: Path = field(init=False)
    logs: Path = field(init=False)
    private: Path = field(init=False)

    def __post_init__(self) -> None:
        for name in ("home", "run", "tmp", "conf", "ctl", "state", "logs", "private"):
            # (private is short: unix socket paths under it, the runtime folders of its programs, have 108 bytes)
            setattr(self, name, self.root / ("pv" if name == "private" else name))
            getattr(self, name).mkdir(parents=True, exist_ok=True)
        os.chmod(self.root, 0o711)
        os.chmod(self.conf, 0o755)
        os.chmod(self.private, 0o711)  # passed through by name, never listed
        # the agent's apps never read the apps' state, the controller's sockets or the logs
        for d in (self.ctl, self.state, self.logs):
            os.chmod(d, 0o700)
        self.restore_agent_modes()

    @property
    def agent_dirs(self) -> tuple[Path, ...]:
        """The folders the agent may write to."""
        return (self.home, self.run, self.tmp)

    def restore_agent_modes(self) -> None:
        """The agent's folders as a fresh desktop has them (an agent may have chmod'ed its home to 000)."""
        for d, mode in ((self.home, 0o755), (self.run, 0o700), (self.tmp, 0o700)):
            os.chmod(d, mode)


def _system_dirs() -> list[str]:
    """bwrap arguments that mirror the host's system folders read-only (merged-/usr aware)."""
    args = ["--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc"]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    return args


class Sandbox:
    """Runs programs for one desktop. Subclasses decide how they are confined.

    `agent_uid`/`agent_gid`: the host uid the agent's processes run as when it is not the controller's
    own (their files are handed over to it); `confinement`: what every child of the agent's gets before
    it runs (control groups, rlimits, the user switch)."""

    kind = "none"
    # whether the controller may read the apps' accessibility trees over their direct D-Bus
    # connections (faster than through the bus): an app's own D-Bus server only accepts its own uid
    a11y_peer_to_peer = True
    agent_uid: int | None = None
    agent_gid: int | None = None
    # the agent's programs see (and, as the same user, could tamper with) the session's own processes: no
    # namespaces of their own between them
    shares_processes = True

    def __init__(self, layout: SandboxLayout, display: int, confinement: Confinement | None = None):
        self.layout = layout
        self.display = display
        self.confinement = confinement or Confinement()
        self._procs: list[Proc] = []

    def base_env(self) -> dict[str, str]:
        return {
            "HOME": str(self.layout.home),
            "USER": SANDBOX_USER,
            "LOGNAME": SANDBOX_USER,
            "SHELL": "/bin/bash",
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "LANG": "C.UTF-8",
            "DISPLAY": f":{self.display}",
            "XDG_RUNTIME_DIR": str(self.layout.run),
            "DBUS_SESSION_BUS_ADDRESS": f"unix:path={self.layout.run / 'bus'}",
            "TMPDIR": "/tmp",
            "TERM": "xterm-256color",
            "NO_AT_BRIDGE": "0",
            # GIO on local files only and GTK's settings in memory: no gvfs or dconf service activated on the
            # session bus by one episode, ended by the reset, and still used by a kept browser (its file chooser
            # listed nothing and the chosen file would not upload)
            "GIO_USE_VFS": "local",
            "GSETTINGS_BACKEND": "memory",
        }

    def spawn(self, name: str, argv: list[str], env: dict[str, str] | None = None, *,
              fd_map: dict[int, int] | None = None, private: Path | None = None) -> Proc:
        """Start one of the agent's programs. `private`: a folder of `layout.private` that this program
        alone sees (its `tmp/` is the program's /tmp), where the sandbox gives each program a filesystem view of
        its own (bwrap); elsewhere it is only as hidden as its name."""
        full_env = {**self.base_env(), **(env or {})}
        return self._track(spawn(name, argv, full_env, self.layout.logs, cwd=self.layout.home, fd_map=fd_map,
                                 confine=self.confinement))

    def _track(self, proc: Proc) -> Proc:
        self._procs = [p for p in self._procs if p.alive] + [proc]
        return proc

    def net_pid(self, proc: Proc) -> int | None:
        """The pid whose network namespace `proc` lives in (None: the host's)."""
        return None

    def own_dirs(self) -> None:
        """The agent's folders (themselves, not what is in them) belong to the agent again."""
        if self.agent_uid is not None:
            for d in self.layout.agent_dirs:
                os.chown(d, self.agent_uid, self.agent_gid, follow_symlinks=False)

    def hand_over(self, path: Path) -> None:
        """Make what the controller wrote at `path` (a file or a folder, recursively) the agent's own,
        never following a symlink on the way."""
        if self.agent_uid is None:
            return
        uid, gid = self.agent_uid, self.agent_gid
        os.chown(path, uid, gid, follow_symlinks=False)
        if path.is_dir() and not path.is_symlink():
            for _, dirs, files, fd in os.fwalk(path, follow_symlinks=False):
                for name in (*dirs, *files):
                    try:
                        os.chown(name, uid, gid, dir_fd=fd, follow_symlinks=False)
                    except FileNotFoundError:
                        pass

    def agent_processes(self, table: dict[int, tuple[int, int, str]]) -> set[int]:
        """Every process of the agent's in the process table (see `processes`): those of its own uid
        where it has one, else everything under the programs this sandbox started."""
        if self.agent_uid is not None:
            return {pid for pid, (_, uid, _) in table.items() if uid == self.agent_uid}
        return descendants(table, {p.popen.pid for p in self._procs if p.alive})

    def agent_pids(self) -> set[int]:
        """The agent's processes now; where it has a uid of its own, one stat per process (no reads)."""
        if self.agent_uid is None:
            return self.agent_processes(processes())
        found = set()
        for entry in os.scandir("/proc"):
            if entry.name.isdigit():
                try:
                    if entry.stat().st_uid == self.agent_uid:
                        found.add(int(entry.name))
                except OSError:
                    continue
        return found

    def sweep(self, keep: set[int]) -> list[str]:
        """SIGKILL every process of the agent's not in `keep` (a double fork, setsid, a service the
        session bus started for it: nothing the agent started outlives its episode); returns what was
        killed."""
        # passes until none is left: a fork bomb forks faster than one pass kills; each pass stops them all
        # first (a stopped process cannot fork), then kills them.
        killed, seen = [], set()
        deadline = time.monotonic() + 5.0
        while time.monotonic() < deadline:
            table = processes()
            stray = sorted(self.agent_processes(table) - keep)
            if not stray:
                break
            for sig in (signal.SIGSTOP, signal.SIGKILL):
                for pid in stray:
                    try:
                        os.kill(pid, sig)
                    except ProcessLookupError:
                        pass
            killed += [f"{table[pid][2]} (pid {pid})" for pid in stray if pid not in seen]
            seen.update(stray)
            time.sleep(0.01)
        return killed

    def wipe_shared(self) -> None:
        """Remove what the agent left in places outside the layout that it shares with others."""

    def watched_dirs(self) -> list[tuple[str, Path]]:
        """Where the agent can write, as (the path it sees, the folder here), for the effects ledger."""
        return [("~", self.layout.home), ("/tmp", self.layout.tmp)]


class UidSandbox(Sandbox):
    """The agent's apps as the account `user` of this machine; the controller stays root."""

    kind = "uid"
    a11y_peer_to_peer = False  # the apps' direct connections refuse root; the a11y bus lets root in
    # outside its own folders, what the account `user` can write in the desktop image (a test checks the
    # image has no other such place)
    SHARED_DIRS = ("/tmp", "/var/tmp", "/dev/shm")

    def __init__(self, layout: SandboxLayout, display: int, user: str = SANDBOX_USER,
                 confinement: Confinement | None = None):
        try:
            entry = pwd.getpwnam(user)
        except KeyError:
            raise SandboxUnavailable(f"the uid sandbox needs an account {user!r} to run the agent's apps as; "
                                     "there is none on this machine (the desktop image creates it)") from None
        if entry.pw_uid == os.geteuid():
            raise SandboxUnavailable(f"the uid sandbox runs the agent's apps as {user!r} (uid {entry.pw_uid}), "
                                     "which is the controller's own uid: start the controller as root")
        self.agent_uid, self.agent_gid = entry.pw_uid, entry.pw_gid
        base = confinement or Confinement()
        super().__init__(layout, display, Confinement((self.agent_uid, self.agent_gid), base.cgroup_procs, base.rlimits))
        self.own_dirs()

    def watched_dirs(self) -> list[tuple[str, Path]]:
        return [("~", self.layout.home), *((top, Path(top)) for top in self.SHARED_DIRS)]

    def wipe_shared(self) -> None:
        for top in self.SHARED_DIRS:
            try:
                entries = list(os.scandir(top))
            except OSError:
                continue
            for entry in entries:
                try:
                    if entry.stat(follow_symlinks=False).st_uid != self.agent_uid:
                        continue
                    if entry.is_dir(follow_symlinks=False):
                        shutil.rmtree(entry.path, ignore_errors=True)
                    else:
                        os.unlink(entry.path)
                except OSError:
                    pass


def processes(proc: Path = Path("/proc")) -> dict[int, tuple[int, int, str]]:
    """pid -> (parent pid, real uid, command name), read from /proc (processes that vanish are skipped, and
    zombies: dead, only not yet reaped)."""
    found = {}
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = dict(line.split(":\t", 1) for line in (entry / "status").read_text().splitlines() if ":\t" in line)
            if fields.get("State", "").startswith("Z"):
                continue
            found[int(entry.name)] = (int(fields["PPid"]), int(fields["Uid"].split()[0]), fields["Name"].strip())
        except (OSError, KeyError, ValueError):
            continue
    return found


def descendants(table: dict[int, tuple[int, int, str]], roots: set[int]) -> set[int]:
    """`roots` and every process under them in `table` (see `processes`)."""
    children: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    out, todo = set(), [r for r in roots if r in table]
    while todo:
        pid = todo.pop()
        if pid not in out:
            out.add(pid)
            todo += children.get(pid, [])
    return out


def executable(pid: int) -> str:
    """The program a process runs: its path, or (where this process may not read it, as the controller of a
    container without CAP_SYS_PTRACE) "comm:" and its command name; "" when it is gone."""
    try:
        return os.readlink(f"/proc/{pid}/exe")
    except PermissionError:
        try:
            return "comm:" + Path(f"/proc/{pid}/comm").read_text().strip()
        except OSError:
            return ""
    except OSError:
        return ""


def uid_problem(user: str = SANDBOX_USER) -> str:
    """Why the uid sandbox cannot run here ("" when it can): no account `user`, or no power to
    switch to it (the controller must be root with CAP_SETUID/SETGID/KILL/CHOWN/DAC_OVERRIDE/FOWNER)."""
    try:
        pwd.getpwnam(user)
    except KeyError:
        return f"there is no account {user!r} to run the agent's apps as"
    if os.geteuid() != 0:
        return "the controller is not root, so it cannot run the agent's apps as another user"
    return ""


# the host uids of local agents: one per desktop (by display number), far from any real account
HOST_UID_BASE = 1_700_000_000


class BwrapSandbox(Sandbox):
    """bubblewrap: every app in namespaces of its own (pid, network, mounts, user), seeing the host's
    system folders read-only, its home, runtime and temp folders, the X socket and nothing else. Run by
    root, the sandbox's uid 1000 is a host uid of its own (`HOST_UID_BASE` + display), so nothing the
    agent does, even out of its namespaces, is done as root, and its processes are exactly that uid's."""

    kind = "bwrap"
    shares_processes = False  # every program in pid and user namespaces of its own

    def __init__(self, layout: SandboxLayout, display: int, confinement: Confinement | None = None):
        if shutil.which("bwrap") is None:
            raise SandboxUnavailable("bubblewrap (bwrap) is not installed; apt-get install bubblewrap")
        base = confinement or Confinement()
        if os.geteuid() == 0:
            closed = [str(p) for p in layout.root.parents if not os.stat(p).st_mode & 0o001]
            if closed:
                raise SandboxUnavailable(f"the sandbox's own uid cannot reach its desktop folder {layout.root}: "
                                         f"{closed[0]} is closed to other users (chmod o+x it, or set TMPDIR "
                                         "to a folder such as /tmp)")
            self.agent_uid = self.agent_gid = HOST_UID_BASE + display
            base = Confinement((self.agent_uid, self.agent_gid), base.cgroup_procs, base.rlimits)
        super().__init__(layout, display, base)
        self.own_dirs()
        self._child_pids: dict[int, int] = {}
        (layout.conf / "passwd").write_text(
            f"root:x:0:0:root:/root:/usr/sbin/nologin\n"
            f"{SANDBOX_USER}:x:{SANDBOX_UID}:{SANDBOX_UID}:Desktop User:{layout.home}:/bin/bash\n"
        )
        (layout.conf / "group").write_text(f"root:x:0:\n{SANDBOX_USER}:x:{SANDBOX_UID}:\n")
        self._chromium_etc = _chromium_etc_with_policy(layout.conf / "chromium-etc")

    def _argv(self, argv: list[str], env: dict[str, str], info_fd: int, private: Path | None = None) -> list[str]:
        lay = self.layout
        tmp = private / "tmp" if private is not None else lay.tmp
        x_socket = f"/tmp/.X11-unix/X{self.display}"
        args = ["bwrap", "--unshare-all", "--die-with-parent", "--new-session",
                "--hostname", "desktop", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID),
                *_system_dirs(),
                "--ro-bind", str(lay.conf / "passwd"), "/etc/passwd",
                "--ro-bind", str(lay.conf / "group"), "/etc/group",
                *(["--ro-bind", str(self._chromium_etc), "/etc/chromium"] if self._chromium_etc else []),
                "--proc", "/proc", "--dev", "/dev",
                # one /tmp for all the agent's apps, as on a real desktop: in its own folder, so the
                # reset wipes it and the disk limit covers it (a program with a private folder: its tmp/ there)
                "--bind", str(tmp), "/tmp", "--bind", str(tmp), "/var/tmp",
                "--dir", "/tmp/.X11-unix", "--ro-bind", x_socket, x_socket,
                "--bind", str(lay.home), str(lay.home), "--bind", str(lay.run), str(lay.run),
                "--ro-bind", str(lay.conf), str(lay.conf),
                *(["--bind", str(private), str(private)] if private is not None else []),
                "--chdir", str(lay.home), "--info-fd", str(info_fd), "--clearenv"]
        for key, value in env.items():
            args += ["--setenv", key, value]
        return [*args, "--", *argv]

    def spawn(self, name: str, argv: list[str], env: dict[str, str] | None = None, *,
              fd_map: dict[int, int] | None = None, private: Path | None = None) -> Proc:
        full_env = {**self.base_env(), **(env or {})}
        read_fd, write_fd = os.pipe()
        try:
            proc = spawn(name, self._argv(argv, full_env, write_fd, private), dict(os.environ), self.layout.logs,
                         cwd=self.layout.home, pass_fds=(write_fd,), fd_map=fd_map, confine=self.confinement)
        finally:
            os.close(write_fd)
        with os.fdopen(read_fd, "rb") as info:
            raw = info.read()  # EOF once bwrap has set the sandbox up and exec'd the program
        try:
            self._child_pids[proc.popen.pid] = int(json.loads(raw)["child-pid"])
        except (ValueError, KeyError) as exc:
            proc.popen.wait(5)
            raise SandboxUnavailable(
                f"bwrap could not start {name!r} (exit {proc.popen.returncode}): {proc.log_tail()}"
            ) from exc
        return self._track(proc)

    def net_pid(self, proc: Proc) -> int | None:
        return self._child_pids.get(proc.popen.pid)


def _chromium_etc_with_policy(target: Path) -> Path | None:
    """A copy of the host's /etc/chromium plus our managed policy (no history, no sign-in...), to be
    mounted over /etc/chromium inside the sandbox. None where the host has no /etc/chromium."""
    from blindact.resources import data_dir

    host = Path("/etc/chromium")
    if not host.is_dir():
        return None
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(host, target, symlinks=True)
    managed = target / "policies" / "managed"
    managed.mkdir(parents=True, exist_ok=True)
    shutil.copy(data_dir("envs") / "desktop" / "chromium-policy.json", managed / "blindact.json")
    return target


def bwrap_problem() -> str:
    """Why bubblewrap cannot make a sandbox on this machine ("" when it can): not installed, or the
    namespaces it needs are not allowed (inside most containers)."""
    if shutil.which("bwrap") is None:
        return "bubblewrap (bwrap) is not installed (apt-get install bubblewrap)"
    result = subprocess.run(
        ["bwrap", "--unshare-all", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "true"],
        capture_output=True, timeout=10, text=True,
    )
    if result.returncode != 0:
        return (f"bubblewrap cannot create its namespaces here ({result.stderr.strip() or f'exit {result.returncode}'}); "
                "allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1) or run as root")
    return ""


def preflight(sandbox: str = "bwrap", **_options) -> None:
    """Raise SandboxUnavailable, saying what to do, when a local desktop with this sandbox cannot start."""
    if sandbox == "bwrap":
        problem = bwrap_problem()
        if problem:
            raise SandboxUnavailable(f"the local desktop's sandbox: {problem}. To run the agent's apps without "
                                     "a sandbox (as your own user: only for agents you trust) pass --sandbox none.")


SANDBOX_KINDS = ("bwrap", "uid", "none")


def make_sandbox(kind: str, layout: SandboxLayout, display: int, confinement: Confinement | None = None) -> Sandbox:
    if kind == "bwrap":
        return BwrapSandbox(layout, display, confinement)
    if kind == "uid":
        return UidSandbox(layout, display, confinement=confinement)
    if kind == "none":
        return Sandbox(layout, display, confinement)
    raise ValueError(f"unknown sandbox kind {kind!r} (use one of {', '.join(SANDBOX_KINDS)})")
