"""One whole desktop on this machine: Xvfb, window manager, D-Bus + AT-SPI, the web apps, the apps a
task launches, and the controller that acts on it. The local provider is this session in a
bubblewrap sandbox; inside a container the controller server wraps the same session.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from blindact.actions import Action, ActionError
from blindact.checks.kinds import parse_check
from blindact.checks.result import CheckResult
from blindact.checks.runner import CheckRunner
from blindact.desktop.browser import Browser, CDPError, CDPPipe
from blindact.desktop.connector import Connector, SocketPolicy
from blindact.desktop.ledger import Ledger
from blindact.desktop.base import DesktopError, Observed, ResetTiming, SetupError, perform_step
from blindact.desktop.controller import Controller, _bgra_to_rgb
from blindact.desktop.procs import Proc, spawn, wait_for
from blindact.desktop.safefs import SafeFolder
from blindact.desktop.limits import Limits, make_cgroup, mount_tmpfs, rlimits, unmount
from blindact.desktop.limits import describe as describe_limits
from blindact.desktop.procs import Confinement
from blindact.desktop.sandbox import (
    SANDBOX_KINDS,
    Sandbox,
    SandboxLayout,
    executable,
    make_sandbox,
    processes,
)
from blindact.desktop.stale import DESKTOP_PREFIX, OWNER_FILE, owner_mark, sweep_stale_desktops
from blindact.desktop.setup import FilesStep, LaunchStep, RunStep, SeedAppsStep, parse_setup_step
from blindact.resources import data_dir

APPS_PORT = 80
_BROWSER_FLAGS = [
    # Debian's Chromium on a closed network (BACKGROUND §2), plus the accessibility switch
    "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--force-renderer-accessibility",
    "--no-default-browser-check", "--password-store=basic", "--disable-features=Translate,MediaRouter",
    "--disable-session-crashed-bubble", "--hide-crash-restore-bubble", "--noerrdialogs",
    "--test-type", "--disable-smooth-scrolling",  # hides the "unsupported command-line flag" infobar that --no-sandbox shows
]
# how long a browser started ahead may take to answer (it has had the whole episode to start)
_SPARE_ANSWER = 10.0
# the browser's application name in the accessibility tree
_BROWSER_APP_NAMES = ("Chromium",)
# the terminal is VTE-based (sakura): its screen text reaches the accessibility tree, xterm's does not
_WINDOW_CLASSES = {"browser": "chromium", "terminal": "sakura", "editor": "mousepad", "files": "thunar",
                   "writer": "libreoffice-writer", "calc": "libreoffice-calc", "impress": "libreoffice-impress",
                   "images": "ristretto", "draw": "drawing", "code": "geany"}
_APP_BINARIES = {"browser": "chromium", "terminal": "sakura", "editor": "mousepad", "files": "thunar",
                 "writer": "soffice", "calc": "soffice", "impress": "soffice", "images": "ristretto", "draw": "drawing",
                 "code": "geany"}
_OFFICE_APPS = ("writer", "calc", "impress")
_APP_LABELS = {"browser": "the browser (Chromium)", "terminal": "the terminal (sakura)",
               "editor": "the text editor", "files": "the file manager", "writer": "LibreOffice Writer",
               "calc": "LibreOffice Calc", "impress": "LibreOffice Impress", "images": "the image viewer (Ristretto)",
               "draw": "the image editor (Drawing)", "code": "the code editor (Geany)"}
_DRAWING_APP_NAMES = ("com.github.maoschanz.drawing",)
# GNOME Drawing's settings (GSettings): kept in a key file outside the home the agent sees, like the terminal's;
# the release-notes dialog it shows on a first start ("would you like to read the help manual?") is off
_DRAWING_SETTINGS = "[com/github/maoschanz/drawing]\nlast-version='{version}'\nmaximized=true\n"


_BACKGROUND = 0x3B4A5C
# The session bus: the usual session policy, but services only from the system's folder (no
# ~/.local/share/dbus-1/services, no $XDG_RUNTIME_DIR/dbus-1/services: a service the agent writes there
# would be started by the bus, outside its apps, and outlive its episode), and no changes to the
# environment the bus starts services with.
_SESSION_BUS_CONF = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <keep_umask/>
  <listen>unix:tmpdir=/tmp</listen>
  <auth>EXTERNAL</auth>
  <servicedir>/usr/share/dbus-1/services</servicedir>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
    <deny send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus"
          send_member="UpdateActivationEnvironment"/>
  </policy>
</busconfig>
"""


def _identity(path: Path) -> tuple[int, int] | None:
    """A socket file's identity (device, inode), None when it is not there or not a socket."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISSOCK(st.st_mode) else None


def _socket_path(address: str) -> Path | None:
    """The socket file of a D-Bus unix:path= address (None for another kind)."""
    for entry in address.split(";"):
        if entry.startswith("unix:"):
            for item in entry[5:].split(","):
                key, _, value = item.partition("=")
                if key == "path":
                    return Path(value)
    return None


def _empty(folder: Path, keep: set[Path], keep_dirs: set[Path]) -> None:
    """Remove everything in `folder` but the entries at the relative paths `keep` (and the folders
    leading to them, `keep_dirs`), never following a symlink."""
    def walk(rel: Path) -> None:
        try:
            entries = list(os.scandir(folder / rel))
        except OSError:
            return
        for entry in entries:
            child = rel / entry.name
            if child in keep:
                continue
            if child in keep_dirs and entry.is_dir(follow_symlinks=False):
                walk(child)
                continue
            try:
                if entry.is_dir(follow_symlinks=False):
                    _make_writable(Path(entry.path))
                    shutil.rmtree(entry.path, onerror=_ignore_vanished)
                else:
                    os.unlink(entry.path)
            except FileNotFoundError:
                pass

    walk(Path())


class DesktopSession:
    """A desktop on this machine. Use as a context manager, or call start() and close()."""

    def __init__(self, root: Path | None = None, width: int = 1280, height: int = 720,
                 sandbox: str = "bwrap", web_apps: bool = True, limits: Limits | None = None):
        if sandbox not in SANDBOX_KINDS:
            raise ValueError(f"sandbox {sandbox!r}: use bwrap (the default), uid (inside a container) or none")
        self.width = width
        self.height = height
        # never a silent fallback: a desktop without the sandbox is one the user asked for
        self.sandbox_kind = sandbox
        self._own_root = root is None
        self._root_arg = root
        self.web_apps = web_apps
        self.layout: SandboxLayout | None = None
        self.display: int | None = None
        self.sandbox: Sandbox | None = None
        self.controller: Controller | None = None
        self.store = None
        self._core: dict[str, Proc] = {}
        self.restarts = 0  # how often a reset had to restart the whole desktop (after an agent tampered with it)
        self._apps: dict[str, Proc] = {}
        self._browser: Browser | None = None
        # the next episode's browser, started ahead with no window (blindact.desktop.browser), where the sandbox
        # hides one program from another (`_spares`); taken by the next browser launch only if `untouched`
        self._spare: Browser | None = None
        self._spare_starting = False  # started by the last reset and not yet awaited (`_await_spare`)
        self._last_action = ""  # the type of the last action: a scroll settles longer
        self._last_frame: bytes | None = None  # the frame settle() ended on, reused by screenshot()
        self._reader = None
        self._launch_count = 0
        self._lock = threading.RLock()
        self._checks: CheckRunner | None = None
        self.ledger: Ledger | None = None
        self.limits = limits or Limits()
        self.limits_description = ""
        self._cgroup = None
        self._connector: Connector | None = None
        self._confinement: Confinement | None = None
        self._sockets_policy: SocketPolicy | None = None
        self._tmpfs = False
        self._a11y_address = ""
        self._pristine: dict[int, str] = {}
        self._sockets: dict[Path, tuple[int, int] | None] = {}
        self._xstate = None
        self.reset_report: list[str] = []  # what the last reset found changed and put back
        self.closed = False
        self.start_seconds: float | None = None

    def __deepcopy__(self, memo) -> "DesktopSession":
        # a running desktop is a shared resource: gymnasium deep-copies env kwargs, and every
        # copy must act on this same desktop
        return self

    # ---------------------------------------------------------------- lifecycle
    def __enter__(self) -> "DesktopSession":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def start(self) -> None:
        if self.controller is not None:
            return
        t0 = time.perf_counter()
        sweep_stale_desktops()
        root = self._root_arg or Path(tempfile.mkdtemp(prefix=DESKTOP_PREFIX))
        # a tmpfs of fixed size under everything the desktop writes: the disk limit (local, as root)
        self._tmpfs = self._own_root and mount_tmpfs(root, self.limits.disk_bytes)
        if self._own_root:
            (root / OWNER_FILE).write_text(owner_mark())  # so a later run can sweep it if this one is killed
        self.layout = SandboxLayout(Path(root))
        try:
            self._checks = CheckRunner(self.layout.home, self.layout.state if self.web_apps else None,
                                       scratch=self.layout.ctl)
            self._checks.start()
            self._start_xvfb()
            self._cgroup = make_cgroup(self.limits, f"d{self.display}") if self.sandbox_kind != "none" else None
            own_uid = self.sandbox_kind == "uid" or (self.sandbox_kind == "bwrap" and os.geteuid() == 0)
            confinement = Confinement(cgroup_procs=self._cgroup.procs if self._cgroup else (),
                                      rlimits=rlimits(self.limits, own_uid) if self.sandbox_kind != "none" else ())
            self.sandbox = make_sandbox(self.sandbox_kind, self.layout, self.display, confinement)
            self.limits_description = describe_limits(self.limits, self._cgroup, self._tmpfs, own_uid)
            if self.web_apps:
                self._start_web_apps()
            self.controller = Controller(self.display, self.width, self.height)
            self._confinement = confinement
            self._open_sockets_policy()
            self._start_core()
            self.ledger = Ledger(self.sandbox.watched_dirs(), self.store, self._episode_pids, self._checks,
                                 exclude=(self.layout.root, Path("/tmp/.X11-unix")))
        except BaseException:
            self.close()
            raise
        self.start_seconds = time.perf_counter() - t0

    def _start_core(self) -> None:
        """The session's own processes, in the sandbox: the session bus (no service folder the agent can
        write, no UpdateActivationEnvironment), the window manager and the accessibility bus. What they are
        once up (pids, programs, socket files, the X server's state) is recorded: a reset keeps them only
        while they are still exactly that."""
        run, conf = self.layout.run, self.layout.conf
        bus_conf = conf / "session-bus.conf"
        bus_conf.write_text(_SESSION_BUS_CONF)
        self._core["dbus"] = self.sandbox.spawn(
            "dbus", ["dbus-daemon", "--nofork", "--nopidfile", f"--config-file={bus_conf}",
                     f"--address=unix:path={run}/bus"])
        if self.web_apps:
            self._open_agent_apps_socket()
        rc = conf / "openbox-rc.xml"
        shutil.copy(data_dir("envs") / "desktop" / "openbox-rc.xml", rc)
        self._core["wm"] = self.sandbox.spawn("wm", ["openbox", "--config-file", str(rc)])
        wait_for(lambda: (run / "bus").exists(), 5, "the session D-Bus socket", self._core["dbus"])
        self._core["atspi"] = self.sandbox.spawn("atspi", ["/usr/libexec/at-spi-bus-launcher", "--launch-immediately"])
        wait_for(lambda: self.controller.root_property("_NET_SUPPORTING_WM_CHECK"), 5,
                 "the window manager", self._core["wm"])
        self.controller.set_background(_BACKGROUND)
        stale = self._a11y_address  # a restarted session: the root window still holds the last launcher's address

        def new_address() -> str:
            found = (self.controller.root_property("AT_SPI_BUS") or "").strip("\0 \n")
            path = _socket_path(found)
            return found if found and found != stale and (path is None or path.exists()) else ""

        address = wait_for(new_address, 5, "the accessibility bus", self._core["atspi"])
        # read once, from the launcher, before any agent runs: the root window's property can be
        # rewritten by any X client afterwards
        self._a11y_address = address.strip("\0 \n")
        self._reader = None
        self._a11y_reader().snapshot()  # the bus starts its registry on the first use: now, so it is the session's
        # (without a uid of the agent's, the registry the bus activates need not be a descendant of what the
        # sandbox started: it is looked for among every process)
        candidates = self._agent_pids if self.sandbox.agent_uid is not None else (lambda: set(processes()))
        wait_for(lambda: any(executable(p).endswith(("at-spi2-registryd", "at-spi2-registr")) for p in candidates()), 5,
                 "the accessibility registry", self._core["atspi"], interval=0.02)
        # (a process already gone, or dead and not yet reaped, is none of the session's: a desktop started after
        # another on the same display gets its uid, and that one's last children may still be zombies)
        self._pristine = {pid: exe for pid in self._agent_pids() if (exe := executable(pid))}
        agent_apps = run / "apps.sock" if self.web_apps else None
        self._sockets = {path: _identity(path) for path in (run / "bus", _socket_path(self._a11y_address), agent_apps)
                         if path is not None}
        self._xstate = self.controller.capture_state(_BACKGROUND)

    def _open_agent_apps_socket(self) -> None:
        """The web apps for the agent's own programs at $XDG_RUNTIME_DIR/apps.sock (`curl --unix-socket`): a
        forwarder of the controller's to the apps' real socket in ctl/, which the agent can neither reach
        nor replace. The agent may delete or swap this one; the reset sees that (its identity is recorded
        with the buses') and restarts the session, which opens it afresh."""
        old = self._core.pop("apps-agent", None)
        if old is not None:
            old.stop(timeout=1.0)
        real, mine = self.layout.ctl / "apps.sock", self.layout.run / "apps.sock"
        wait_for(real.exists, 10, "the web apps server", self._core.get("webapps"))
        self._core["apps-agent"] = spawn(
            "apps-agent-forwarder", ["socat", f"UNIX-LISTEN:{mine},fork,unlink-early,mode=666", f"UNIX-CONNECT:{real}"],
            dict(os.environ), self.layout.logs, cwd=self.layout.root)
        wait_for(mine.exists, 5, "the agent's web apps socket", self._core["apps-agent"])

    def _agent_pids(self) -> set[int]:
        return self.sandbox.agent_pids()

    def _open_sockets_policy(self) -> None:
        """How the controller opens the desktop's D-Bus sockets (blindact.desktop.connector): where the buses
        run in the sandbox's user namespace, they know the agent's uid, not root, and a helper of that uid
        connects for it."""
        if self._connector is not None:
            self._connector.close()
            self._connector = None
        if self.sandbox.agent_uid is not None and self.sandbox.kind == "bwrap":
            self._connector = Connector(self.sandbox.agent_uid, self.sandbox.agent_gid, self._confinement)
        self._sockets_policy = SocketPolicy(self.layout.run, self._connector, also=(self.layout.private,))

    def _helpers(self) -> set[int]:
        """The controller's own processes that run as the agent's uid (the socket helper): never swept."""
        return {self._connector.pid} if self._connector is not None else set()

    def _start_xvfb(self) -> None:
        read_fd, write_fd = os.pipe()
        try:
            proc = spawn("xvfb", ["Xvfb", "-displayfd", str(write_fd), "-screen", "0",
                                  f"{self.width}x{self.height}x24", "-nolisten", "tcp", "-noreset",
                                  "-dpi", "96", "+extension", "RANDR"],
                         dict(os.environ), self.layout.logs, cwd=self.layout.root, pass_fds=(write_fd,))
        finally:
            os.close(write_fd)
        self._core["xvfb"] = proc
        with os.fdopen(read_fd, "rb") as pipe:
            line = pipe.readline().strip()
        if not line:
            proc.popen.wait(2)
            raise DesktopError(f"Xvfb failed to start (is the xvfb package installed?):\n{proc.log_tail()}")
        self.display = int(line)

    def _start_web_apps(self) -> None:
        from blindact.apps.state import AppStateStore

        self.store = AppStateStore(self.layout.state)
        self.store.ensure_initialized()
        self._core["webapps"] = spawn(
            "webapps", [sys.executable, "-m", "blindact.apps.server", "--state-dir", str(self.layout.state),
                        "--uds", str(self.layout.ctl / "apps.sock")],
            dict(os.environ), self.layout.logs, cwd=self.layout.root)

    def close(self) -> None:
        with self._lock:
            if self.closed:
                return
            self.closed = True
            if self._reader is not None:
                self._reader.close()
            for browser in (self._browser, self._spare):
                if browser is not None:
                    browser.stop()
            for proc in [*self._apps.values(), *reversed(list(self._core.values()))]:
                proc.stop()
            if self.controller is not None:
                self.controller.close()
            if self._checks is not None:
                self._checks.close()
            if self._connector is not None:
                self._connector.close()
                self._connector = None
            if self.sandbox is not None:
                self.sandbox.sweep(set())
            if self._cgroup is not None:
                self._cgroup.close()
            if self._own_root and self.layout is not None:
                if self._tmpfs:
                    unmount(self.layout.root)
                shutil.rmtree(self.layout.root, ignore_errors=True)

    def _running_or_closed(self) -> dict[str, bool]:
        """Per process: still running, or (a task's app or message window only) closed cleanly. An app
        that exits with code 0 was closed from inside the desktop (File > Quit, `exit` in the terminal, OK
        on the simulated user's reply): the agent's choice, not a fault of the desktop."""
        return {**{name: p.alive for name, p in self._core.items()},
                **{name: p.alive or p.popen.returncode == 0 for name, p in self._apps.items()}}

    def health(self) -> dict[str, bool]:
        return self._running_or_closed()

    def check_alive(self) -> None:
        """Raise DesktopError naming the first process that died (with its log tail)."""
        fine = self._running_or_closed()
        for name, proc in {**self._core, **self._apps}.items():
            if not fine[name]:
                label = _APP_LABELS.get(name, name)
                raise DesktopError(
                    f"{label} exited unexpectedly (code {proc.popen.returncode}); last log lines:\n"
                    f"{proc.log_tail(8)}")

    # ---------------------------------------------------------------- reset
    def reset(self, setup: list[dict]) -> ResetTiming:
        steps = [parse_setup_step(s) for s in setup]
        try:
            return self._reset(steps)
        except DesktopError:
            raise
        except (TimeoutError, RuntimeError) as exc:
            # an app or page that does not come up in time is the desktop failing this episode: recorded as
            # a desktop error (rated nowhere, played again on resume, retried by validate), never a crash
            raise DesktopError(f"reset failed: {exc}") from exc

    def _reset(self, steps: list) -> ResetTiming:
        phases: dict[str, float] = {}
        t0 = time.perf_counter()
        with self._lock:
            self._await_spare()  # the last episode's agent may have done nothing at all
            self.reset_report = self._clean()
            phases["clean"] = time.perf_counter() - t0
            t = time.perf_counter()
            self._wipe_home()
            seeds: dict[str, dict] = {}
            for step in steps:
                if isinstance(step, SeedAppsStep):
                    seeds.update(step.seed)
                elif isinstance(step, FilesStep):
                    self._write_files(step)
            self.sandbox.hand_over(self.layout.home)
            # if the last episode left none (never before the wipe: a browser reads the home's settings as it starts)
            self._start_spare()
            phases["files"] = time.perf_counter() - t
            t = time.perf_counter()
            if self.store is not None:
                self.store.reset(seeds)
            elif seeds:
                raise SetupError("this desktop runs no web apps, but the task seeds " + ", ".join(seeds))
            phases["apps_state"] = time.perf_counter() - t
            t = time.perf_counter()
            batch: list = []
            opened = office = False  # apps of an earlier batch are on screen (a seed or run step came between)
            for step in [*steps, None]:
                if isinstance(step, LaunchStep):
                    batch.append(step.launch)
                    continue
                if batch:
                    office = office or any(launch.app in _OFFICE_APPS for launch in batch)
                    self._launch_all(batch, over_others=opened, office=office)
                    batch, opened = [], True
                if isinstance(step, RunStep):
                    self._run(step)
            self._start_spare()  # for the next episode, if this one took it
            phases["launch"] = time.perf_counter() - t
            t = time.perf_counter()
            self.settle(max_wait=3.0, quiet=0.1)
            phases["settle"] = time.perf_counter() - t
            t = time.perf_counter()
            if self.ledger is not None:
                self.ledger.begin()  # what the task starts with is the baseline, not an effect
            phases["ledger"] = time.perf_counter() - t
        return ResetTiming(time.perf_counter() - t0, phases)

    # ---------------------------------------------------------------- cleaning up after an agent
    def _clean(self) -> list[str]:
        """Leave nothing of the last episode's agent: its apps closed (the browser too: one kept across the
        home's wipe could not upload a file chosen in the next episode), every other process of its killed
        (only the session's own processes, still exactly as started, are kept), the X server's state put
        back, its runtime and temp folders emptied. Where that cannot be done (a core process replaced, a
        socket swapped, the screen resized), the whole desktop is restarted: the next episode always starts
        as from a cold start. Returns what was found changed (empty after a well-behaved agent)."""
        report: list[str] = []
        # the task opened apps (`_apps`, closed below): the agent may have run programs of its own, not only from a
        # terminal, Geany's commands, the file manager or LibreOffice's macros, but from any app that can hand a
        # file to another (the image viewer's Edit > Open with lists Geany, Sakura, Vim and Python, and opens them)
        if self.sandbox.shares_processes and self._apps:
            # the agent's code ran as the session's own user, in the same process space: it could have
            # written into the memory of the session's processes (/proc/<pid>/mem) and nothing would show.
            # Only a fresh session is known to be clean.
            report.append("the agent could run programs beside the session's own: restarted the session")
            self._restart_session(report)
            return report
        try:
            self._stop_apps()
        except TimeoutError as exc:
            report.append(str(exc))
        keep, problems = self._kept()
        killed = self.sandbox.sweep(keep)
        if killed:
            report.append("killed " + ", ".join(killed[:10]) + (f" and {len(killed) - 10} more" if len(killed) > 10 else ""))
        problems += self._socket_problems()
        if problems:
            report += problems
            self._restart_session(report)
            return report
        try:
            report += [f"X server: {c}" for c in self.controller.restore_state(self._xstate, keep)]
        except Exception as exc:  # noqa: BLE001 - whatever stops the X server's restore: a cold restart
            report.append(f"the X server could not be restored ({type(exc).__name__}: {exc})")
            self._restart_all()
            return report
        if self.controller.windows():
            report.append("windows of the last episode would not close")
            self._restart_session(report)
            return report
        self._tidy_agent_folders()
        return report

    def _tidy_agent_folders(self) -> None:
        self.layout.restore_agent_modes()
        self.sandbox.own_dirs()
        self._wipe_runtime()
        self.sandbox.wipe_shared()

    def _restart_session(self, report: list[str]) -> None:
        """Stop every process of the agent's and the session's own (bus, window manager, accessibility,
        browser), put the X server back and start the session afresh; the X server, the web apps and the
        controller stay. Where even the X server cannot be put back, the whole desktop restarts."""
        if self._reader is not None:
            self._reader.close()
            self._reader = None
        self._stop_apps(wait=False)
        self._drop_spare()
        for name in ("atspi", "wm", "dbus"):
            proc = self._core.pop(name, None)
            if proc is not None:
                proc.stop(timeout=1.0)
        self.sandbox.sweep(self._helpers())
        try:
            self.controller.restore_state(self._xstate, set())
        except Exception as exc:  # noqa: BLE001 - see the docstring
            report.append(f"the X server could not be restored ({type(exc).__name__}: {exc})")
            self._restart_all()
            return
        _empty(self.layout.run, set(), set())
        self._tidy_agent_folders()
        if self._connector is not None and self._connector.pid not in self._agent_pids():
            self._open_sockets_policy()  # the helper died (it cannot be reached by the agent: a bug or the OOM killer)
        self._start_core()
        self.restarts += 1

    def _kept(self) -> tuple[set[int], list[str]]:
        """The processes of the agent's that a reset keeps, and why the session cannot be kept ("" each)."""
        agent = self.sandbox.agent_processes(processes())
        keep = ({pid for pid, exe in self._pristine.items() if pid in agent and executable(pid) == exe} | self._helpers()
                | self._spare_pids(agent))
        problems = [f"the session's {exe.rsplit('/', 1)[-1]} (pid {pid}) was stopped or replaced"
                    for pid, exe in self._pristine.items() if pid not in keep]
        return keep, problems

    def _socket_problems(self) -> list[str]:
        return [f"the socket {path} was replaced" for path, ident in self._sockets.items() if _identity(path) != ident]

    def _wipe_runtime(self) -> None:
        """Empty the agent's runtime and temp folders, but for the session's own sockets (never through a
        symlink)."""
        keep = {p.relative_to(self.layout.run) for p in self._sockets if self.layout.run in p.parents}
        keep_dirs = {parent for k in keep for parent in k.parents if str(parent) != "."}
        for folder, rel in ((self.layout.run, Path()), (self.layout.tmp, None)):
            _empty(folder, keep if rel is not None else set(), keep_dirs if rel is not None else set())

    def _restart_all(self) -> None:
        """Stop every process of this desktop and start it afresh (a new X server included)."""
        self.close()
        self.closed = False
        self.controller = None
        self._core, self._apps = {}, {}
        self._browser = self._spare = None
        self._reader = None
        self.store = None
        self.start()
        self.restarts += 1

    def _stop_apps(self, wait: bool = True) -> None:
        """Close the task's apps. `wait`: until their windows are gone (a restart that kills every client
        anyway need not)."""
        if self._browser is not None:
            self._browser.stop()
            self._browser = None
        closing = list(self._apps)
        for name in closing:
            self._apps.pop(name).stop(timeout=1.0)

        def others() -> list[dict]:
            return self.controller.windows()

        if closing and wait:
            try:
                wait_for(lambda: not others(), 1.5, "the closed apps' windows to go", interval=0.05)
            except TimeoutError:
                # a window whose owner we did not start (e.g. a file manager instance activated over
                # D-Bus when its launcher handed over): disconnect its X client
                for w in others():
                    self.controller.kill_client(w["id"])
                try:
                    wait_for(lambda: not others(), 3, "the closed apps' windows to go", interval=0.05)
                except TimeoutError as exc:
                    still = ", ".join(f'{w["title"]!r} [{w["class"]}]' for w in others())
                    raise TimeoutError(f"{exc}; still open: {still}") from None

    def _wipe_home(self) -> None:
        # an app may still be writing (a cache, a lock) while we wipe: files vanishing under us are
        # fine, anything left behind is retried, and a home that will not empty is an error
        for _ in range(3):
            for child in list(self.layout.home.iterdir()):
                try:
                    if child.is_dir() and not child.is_symlink():
                        _make_writable(child)
                        shutil.rmtree(child, onerror=_ignore_vanished)
                    else:
                        child.unlink(missing_ok=True)
                except FileNotFoundError:
                    continue
            if not any(self.layout.home.iterdir()):
                return
        raise SetupError(f"could not empty the sandbox home {self.layout.home}: "
                         f"{', '.join(p.name for p in self.layout.home.iterdir())} remain")

    def _write_files(self, step: FilesStep) -> None:
        step.write(self.layout.home)

    def _run(self, step: RunStep) -> None:
        proc = self.sandbox.spawn("setup-run", ["/bin/bash", "-c", step.run])
        try:
            proc.popen.wait(step.timeout)
        except subprocess.TimeoutExpired:
            proc.stop()
            raise SetupError(f"setup command timed out after {step.timeout}s: {step.run!r}") from None
        if proc.popen.returncode != 0:
            raise SetupError(f"setup command failed (exit {proc.popen.returncode}): {step.run!r}\n{proc.log_tail()}")

    def _launch_all(self, launches: list, over_others: bool = False, office: bool = False) -> None:
        """Start apps together (each start is mostly waiting for its window), then wait for all of
        them, and bring the last one to the front as if it had been opened last (also over the apps of
        an earlier batch, `over_others`). With a LibreOffice app on screen (`office`) the last one is
        held in front a moment: LibreOffice may still raise itself over it when its load ends."""
        started = [self._launch(launch) for launch in launches]
        windows = [self._await_window(*item) for item in started]
        hold = len(windows) > 1 or over_others
        if hold:
            self._bring_to_front(windows[-1], _APP_LABELS[launches[-1].app], steady=1.5 if office else 0.0)
        front = launches[-1]
        if front.app == "browser" and front.url and not front.url.startswith("about:"):
            # a page hidden behind another app's window is not laid out: only now, in front, it shows
            wait_for(self._page_loaded, 20, f"the page {front.url} to show", self._apps.get("browser"), interval=0.05)
            if hold and office:
                self._bring_to_front(windows[-1], _APP_LABELS[front.app], steady=0.5)

    def _bring_to_front(self, window: int, label: str, steady: float = 0.0, within: float = 10.0) -> None:
        """Activate `window` and keep it in front until it has stayed there `steady` seconds: an app
        started with it (LibreOffice finishing its load) may still raise itself over it."""
        def focused() -> bool:
            return any(w["id"] == window and w["focused"] for w in self.controller.windows())

        deadline = time.monotonic() + within
        self.controller.activate(window)
        wait_for(focused, 5, f"the window of {label} to come to the front", interval=0.02)
        since = time.monotonic()
        while time.monotonic() - since < steady and time.monotonic() < deadline:
            time.sleep(0.05)
            if not focused():
                self.controller.activate(window)
                wait_for(focused, 5, f"the window of {label} to come to the front", interval=0.02)
                since = time.monotonic()

    def _launch(self, launch) -> tuple:
        binary = _APP_BINARIES[launch.app]
        if shutil.which(binary) is None:
            raise SetupError(f"{_APP_LABELS[launch.app]} is not installed ({binary}); run `make deps`")
        self._launch_count += 1
        home = self.layout.home
        before = {w["id"] for w in self.controller.windows()}
        if launch.app == "browser":
            proc = self._open_browser(launch.url or "about:blank")
        elif launch.app == "terminal":
            cwd = home / launch.cwd if launch.cwd else home
            # sakura keeps its settings outside the home the agent sees; the shell gets the usual env
            argv = ["sakura", "-t", "Terminal", "-f", "DejaVu Sans Mono 11", "-c", "110", "-r", "32",
                    "-d", str(cwd), "-x", "env -u XDG_CONFIG_HOME /bin/bash -i"]
            proc = self.sandbox.spawn("terminal", argv, {"XDG_CONFIG_HOME": str(self.layout.run / "terminal-config")})
        elif launch.app == "editor":
            argv = ["mousepad", str(home / launch.file)] if launch.file else ["mousepad"]
            proc = self.sandbox.spawn("editor", argv)
        elif launch.app in _OFFICE_APPS:
            profile = _office_profile(self.layout.run)
            self.sandbox.hand_over(profile)
            argv = ["soffice", f"-env:UserInstallation=file://{profile}", "--norestore",
                    "--nologo", "--nolockcheck", f"--{launch.app}", *([str(home / launch.file)] if launch.file else [])]
            # the GTK3 plugin is the one that speaks AT-SPI
            proc = self.sandbox.spawn(launch.app, argv, {"SAL_USE_VCLPLUGIN": "gtk3"})
        elif launch.app == "images":
            proc = self.sandbox.spawn("images", ["ristretto", str(home / launch.file)])
        elif launch.app == "draw":
            config = _drawing_config(self.layout.run)
            self.sandbox.hand_over(config)
            # the key-file backend instead of the sandbox's in-memory one, so the seeded settings are read
            proc = self.sandbox.spawn("draw", ["drawing", str(home / launch.file)],
                                      {"XDG_CONFIG_HOME": str(config), "GSETTINGS_BACKEND": "keyfile"})
        elif launch.app == "code":
            # no terminal support: Geany's hidden VTE would run a second shell (and the home's ~/.bashrc) that
            # the agent never sees
            argv = ["geany", "--new-instance", "--no-session", "--no-msgwin", "--no-terminal",
                    f"--config={self.layout.run / 'geany'}",
                    *([str(home / launch.file)] if launch.file else [])]
            proc = self.sandbox.spawn("code", argv)
        else:
            argv = ["thunar", str(home / (launch.cwd or ""))]
            proc = self.sandbox.spawn("files", argv)
        self._apps[launch.app] = proc
        return launch, proc, before

    def _await_window(self, launch, proc: Proc, before: set[int]) -> int:
        wanted = _WINDOW_CLASSES[launch.app]

        def new_window() -> int | None:
            return next((w["id"] for w in self.controller.windows()
                         if w["class"].lower() == wanted and w["id"] not in before), None)

        window = wait_for(new_window, 20, f"the window of {_APP_LABELS[launch.app]}", proc, interval=0.1)
        if launch.app in _OFFICE_APPS and launch.file:
            # LibreOffice maps its window before the document is in it, and raises it once loaded:
            # wait for the document's name in the title, so that raise cannot come after the reset
            # has brought the last app to the front
            # (bounded and not an error: a CSV opens its import dialog first, the title follows later)
            name = Path(launch.file).name
            try:
                wait_for(lambda: any(w["id"] == window and name in w["title"] for w in self.controller.windows()),
                         10, f"{_APP_LABELS[launch.app]} to load {launch.file}", proc, interval=0.1)
            except TimeoutError:
                pass
        if launch.app == "draw":
            # Drawing maps its window well before it has built its widgets and painted the picture (a
            # second or two here): wait for its toolbar in the accessibility tree (bounded, not an error)
            try:
                wait_for(self._drawing_ready, 10, f"{_APP_LABELS[launch.app]} to show {launch.file}", proc, interval=0.1)
            except TimeoutError:
                pass
        if launch.app == "browser" and launch.url and not launch.url.startswith("about:"):
            # asked over DevTools, not the accessibility tree: an app launched with the browser may
            # open its window over the page, and a hidden page is not laid out for AT-SPI
            wait_for(lambda: self._page_ready(launch.url), 20, f"the page {launch.url} to load", proc, interval=0.05)
            window = wait_for(new_window, 5, f"the window of {_APP_LABELS[launch.app]}", proc, interval=0.05)
        return window

    def _open_browser(self, url: str) -> Proc:
        """The task's page in a fresh window of the spare browser if it is untouched, else of a new one."""
        if self._browser is not None:  # a second launch of the browser in one setup: one browser at a time
            self._browser.stop()
        spare, self._spare = self._spare, None
        if spare is not None:
            if spare.untouched(timeout=_SPARE_ANSWER):
                self._browser = spare
                try:
                    spare.open_page(url)
                    return spare.proc
                except (CDPError, TimeoutError) as exc:
                    self.reset_report.append(f"the browser started ahead did not open the page ({exc}): started a new one")
            else:
                self.reset_report.append("the browser started ahead was reached by the agent: started a new one")
            spare.stop()
        self._browser = browser = self._start_browser()
        try:
            browser.open_page(url)
        except CDPError as exc:
            raise DesktopError(f"the browser did not open {url}: {exc}\n{browser.proc.log_tail()}") from exc
        return browser.proc

    def _spares(self) -> bool:
        """Whether the next browser may be started ahead: only where each of the agent's programs has process
        and filesystem namespaces of its own, so the agent's programs of this episode cannot see it."""
        return not self.sandbox.shares_processes

    def _start_spare(self) -> None:
        if self._spare is not None and not self._spare.alive:
            self.reset_report.append("the browser started ahead had stopped (its X connection cut?): started a new one")
            self._drop_spare()
        if self._spare is None and self._spares() and shutil.which("chromium") is not None:
            try:
                self._spare = self._start_browser()
                self._spare_starting = True
            except (OSError, RuntimeError, TimeoutError) as exc:  # only a head start: a browser task starts its own
                self.reset_report.append(f"the browser could not be started ahead ({type(exc).__name__}: {exc})")

    def _await_spare(self) -> bool:
        """Wait, once, for the browser the last reset started ahead: whether it answers over its pipe with no target
        (`Browser.untouched`). Awaited before the agent's first action (`execute`, which drops one that fails) and
        before the next reset (where the launch and `_start_spare` judge it and say so), not within the reset: its
        start overlaps the agent's first turn, and what it reads as it starts (the X server's resources, the home's
        settings) is still what the reset left, never what the agent then changes."""
        starting, self._spare_starting = self._spare_starting, False
        return not starting or self._spare is None or self._spare.untouched(timeout=_SPARE_ANSWER)

    def _drop_spare(self) -> None:
        if self._spare is not None:
            self._spare.stop()
            self._spare = None

    def _spare_pids(self, agent: set[int]) -> set[int]:
        """The spare browser's processes among `agent`: those in its pid namespace (and the sandbox around it)."""
        spare = self._spare
        if spare is None:
            return set()
        inner = self.sandbox.net_pid(spare.proc)
        try:
            ns = os.readlink(f"/proc/{inner}/ns/pid")
        except (OSError, TypeError):
            return {spare.proc.popen.pid}
        found = {spare.proc.popen.pid}
        for pid in agent:
            try:
                if os.readlink(f"/proc/{pid}/ns/pid") == ns:
                    found.add(pid)
            except OSError:
                continue
        return found

    def _episode_pids(self) -> set[int]:
        """The agent's processes but the spare browser's (which the ledger must not count as the agent's)."""
        agent = self._agent_pids()
        return agent - self._spare_pids(agent)

    def _start_browser(self) -> Browser:
        """A Chromium with no window, its DevTools pipe and the web apps' port in its network. Its profile and
        runtime and temp folders are in a private folder (`SandboxLayout.private`), which no other program of the
        agent's sees: a browser started ahead cannot be tampered with through its files, its accessibility socket or
        its singleton socket, and a reset's wipe of the shared runtime and temp folders leaves them be."""
        profile = self.layout.private / secrets.token_hex(3)
        profile.mkdir(mode=0o700)
        for sub in ("tmp", "run"):
            (profile / sub).mkdir(mode=0o700)
        self.sandbox.hand_over(profile)
        argv = ["chromium", *_BROWSER_FLAGS, "--remote-debugging-pipe", f"--user-data-dir={profile / 'data'}",
                "--window-position=0,0", f"--window-size={self.width},{self.height}", "--start-maximized",
                "--no-startup-window"]
        to_browser_r, to_browser_w = os.pipe()
        from_browser_r, from_browser_w = os.pipe()
        try:
            proc = self.sandbox.spawn("browser", argv, {"ACCESSIBILITY_ENABLED": "1", "XDG_RUNTIME_DIR": str(profile / "run")},
                                      fd_map={3: to_browser_r, 4: from_browser_w}, private=profile)
        finally:
            os.close(to_browser_r)
            os.close(from_browser_w)
        browser = Browser(proc, CDPPipe(to_browser_w, from_browser_r), profile)
        try:
            # the page is opened only once the web apps are reachable from the browser's network
            browser.helpers += self._forward_apps_port(proc)
        except BaseException:
            browser.stop()
            raise
        return browser

    def _forward_apps_port(self, browser: Proc) -> list[Proc]:
        """Let the browser reach the web apps at http://<app>.localhost/ (port 80 of its loopback)."""
        if not self.web_apps:
            return []
        sock = self.layout.ctl / "apps.sock"
        wait_for(sock.exists, 10, "the web apps server", self._core.get("webapps"))
        listen = f"TCP-LISTEN:{APPS_PORT},bind=127.0.0.1,reuseaddr,fork"
        argv = ["socat", listen, f"UNIX-CONNECT:{sock}"]
        net_pid = self.sandbox.net_pid(browser)
        if net_pid is not None:
            # root on the host may bind port 80 in the sandbox's network namespace; the sandbox may not
            argv = ["nsenter", f"--net=/proc/{net_pid}/ns/net", *argv]
        forwarder = spawn("apps-forwarder", argv, dict(os.environ), self.layout.logs, cwd=self.layout.root)
        tcp_table = f"/proc/{net_pid or 'self'}/net/tcp"
        try:
            wait_for(lambda: _listening(tcp_table, APPS_PORT), 10, "the web apps port in the browser's network", forwarder)
        except BaseException:
            forwarder.stop(timeout=1.0)
            raise
        return [forwarder]

    def _page_ready(self, url: str) -> bool:
        try:
            return self._browser is not None and self._browser.page_ready(url)
        except (CDPError, TimeoutError):
            return False

    def _page_loaded(self) -> bool:
        """The browser shows a laid-out document that is no longer loading (AT-SPI 'busy'). Only the
        browser's tree is read: an app launched with it (LibreOffice, Geany) may be slow to answer or
        big enough to use up the snapshot's budget before the browser's document is reached."""
        from blindact.desktop.atspi import A11yError

        try:
            nodes = self._a11y_reader().snapshot(apps=_BROWSER_APP_NAMES)
        except A11yError:
            self._reader = None
            return False
        docs = [n for n in nodes if n.role == "document web" and n.bbox and n.bbox[2] > 0 and n.bbox[3] > 0]
        return bool(docs) and not any("busy" in n.states for n in docs)

    def _drawing_ready(self) -> bool:
        """GNOME Drawing's window holds its widgets: its Save button is in the accessibility tree."""
        from blindact.desktop.atspi import A11yError

        try:
            nodes = self._a11y_reader().snapshot(apps=_DRAWING_APP_NAMES)
        except A11yError:
            self._reader = None
            return False
        return any(n.role == "push button" and n.name == "Save" and n.bbox and n.bbox[2] > 0 for n in nodes)

    def _a11y_reader(self):
        from blindact.desktop.atspi import AccessibilityReader

        if self._reader is None:
            self._reader = AccessibilityReader(self._a11y_address, peer_to_peer=self.sandbox.a11y_peer_to_peer,
                                               opener=self._sockets_policy.open)
        return self._reader

    # ---------------------------------------------------------------- acting and observing
    def execute(self, action: Action) -> None:
        if action.is_terminal:
            raise ActionError(f"{action.type} ends the episode; it is not performed on the desktop")
        self.check_alive()
        if not self._await_spare():
            self._drop_spare()
        self.controller.execute(action)
        self._last_action = action.type

    def settle(self, max_wait: float = 1.5, quiet: float | None = None) -> float:
        if quiet is None:
            # a page may keep scrolling (or lazily paint what scrolled in) with pauses between frames;
            # the terminal (VTE) draws typed text and a command's output 40-150 ms after the keys
            quiet = 0.15 if self._last_action in ("scroll", "type", "key") else 0.05
        waited, self._last_frame = self.controller.settle(max_wait=max_wait, quiet=quiet)
        return waited

    def screenshot(self) -> np.ndarray:
        frame = self._last_frame
        self._last_frame = None
        if frame is None:
            return self.controller.screenshot()
        return _bgra_to_rgb(frame, self.width, self.height)

    def accessibility_tree(self, wait_loaded: float = 5.0) -> str:
        """Windows, then every app's AT-SPI tree. A web page still loading is waited for (bounded),
        as a person would, and the screen settled again, so tree and screenshot show the loaded page."""
        from blindact.desktop.atspi import A11yError, serialize, window_line

        deadline = time.monotonic() + wait_loaded
        # after a scroll, Chromium reports new positions to AT-SPI a little after it paints them:
        # read until two snapshots agree, so a point taken from the tree hits what the screen shows
        previous = None if self._last_action == "scroll" else ""
        while True:
            try:
                nodes = self._a11y_reader().snapshot()
            except A11yError as exc:
                self._reader = None
                lines = [window_line(w) for w in self.controller.windows()]
                return "\n".join([*lines, f"(accessibility tree unavailable: {exc})"])
            loading = any(n.role == "document web" and "busy" in n.states for n in nodes)
            text = serialize(nodes)
            if time.monotonic() > deadline or (not loading and (previous == "" or text == previous)):
                break
            if previous != "":
                previous = text
                time.sleep(0.08)
            if loading:
                self.settle(max_wait=0.5)
        self._last_action = ""
        lines = [window_line(w) for w in self.controller.windows()]
        return "\n".join([*lines, text])

    def step(self, actions: list[Action]) -> Observed:
        return perform_step(self, actions)

    def record_effects(self) -> list[dict]:
        """What changed since the last step (blindact.desktop.ledger): called by `perform_step`."""
        return self.ledger.step() if self.ledger is not None else []

    def show_message(self, title: str, text: str) -> None:
        """A dialog window (zenity, inside the sandbox, so its text is in the accessibility tree too);
        returns once it shows, or raises DesktopError."""
        self.check_alive()
        if shutil.which("zenity") is None:
            raise DesktopError("zenity is not installed; the simulated user's reply cannot be shown (run `make deps`)")
        before = {w["id"] for w in self.controller.windows()}
        self._launch_count += 1
        proc = self.sandbox.spawn(f"message-{self._launch_count}", [
            "zenity", "--info", "--no-markup", "--no-wrap", "--title", title, "--text", text])
        self._apps[f"message-{self._launch_count}"] = proc
        try:
            wait_for(lambda: any(w["id"] not in before and w["title"] == title for w in self.controller.windows()),
                     5, f"the {title!r} window", proc)
        except (RuntimeError, TimeoutError) as exc:
            raise DesktopError(f"showing a message on the desktop failed: {exc}") from exc
        self.settle(max_wait=1.0)

    def run_checks(self, checks: list[dict]) -> list[CheckResult]:
        labels = [parse_check(raw).label() for raw in checks]
        if self._checks is None:
            raise DesktopError("the desktop is not started")
        return self._checks.run(checks, labels, self.ledger.effects if self.ledger else [])


def _listening(tcp_table: str, port: int) -> bool:
    """Whether a socket listens on 127.0.0.1:`port` in the network namespace of that /proc table."""
    want = f"0100007F:{port:04X}"
    try:
        with open(tcp_table) as f:
            return any(line.split()[1] == want and line.split()[3] == "0A" for line in list(f)[1:])
    except OSError:
        return False


def _ignore_vanished(func, path, exc_info) -> None:
    if not isinstance(exc_info[1], FileNotFoundError):
        raise exc_info[1]


def _make_writable(path: Path) -> None:
    # an agent may chmod 000 a folder; the reset must still be able to remove it. Never through a
    # symlink: the agent could point one at a folder of the controller's (the reset runs as root in
    # a container), and chmod follows links.
    for target in [str(path), *(os.path.join(d, n) for d, names, _ in os.walk(path) for n in names)]:
        try:
            fd = os.open(target, os.O_PATH | os.O_NOFOLLOW)  # needs no permission on the folder itself
        except FileNotFoundError:
            continue
        try:
            if stat.S_ISDIR(os.fstat(fd).st_mode):  # a symlink opens as itself, and is skipped
                os.chmod(f"/proc/self/fd/{fd}", 0o755)
        finally:
            os.close(fd)


def _drawing_version() -> str:
    """The installed GNOME Drawing's version (its launcher script names it), which its settings must name
    for the first-start dialog to stay away."""
    try:
        text = Path(shutil.which("drawing") or "/usr/bin/drawing").read_text(errors="replace")
    except OSError:
        return "1.0.2"
    found = re.search(r"^VERSION = '([^']+)'", text, re.M)
    return found.group(1) if found else "1.0.2"


def _drawing_config(run: Path) -> Path:
    """Fresh settings for GNOME Drawing per launch (outside the agent's home, as the terminal's)."""
    config = run / "drawing-config"
    shutil.rmtree(config, ignore_errors=True)  # never follows a symlink
    SafeFolder(run).write_bytes("drawing-config/glib-2.0/settings/keyfile",
                                _DRAWING_SETTINGS.format(version=_drawing_version()).encode())
    return config


def _office_profile(run: Path) -> Path:
    """A fresh LibreOffice profile per launch (so no recent-documents list leaks between episodes),
    seeded with settings that skip the first-start dialogs and the keep-format question."""
    profile = run / "libreoffice-profile"
    shutil.rmtree(profile, ignore_errors=True)  # never follows a symlink: a planted one is removed, not its target
    SafeFolder(run).write_bytes("libreoffice-profile/user/registrymodifications.xcu",
                                (data_dir("envs") / "desktop" / "libreoffice-registrymodifications.xcu").read_bytes())
    return profile

