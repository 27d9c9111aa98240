"""The Docker provider: one container per desktop; its controller server is reached over HTTP on a
unix socket (blindact.desktop.remote.RemoteDesktop), this module owns the container's life.

Why a unix socket: the container runs with `--network none` (no route anywhere, not even to the
host), so nothing can be published on a TCP port. The controller server listens on a socket in a
folder the host bind-mounts into the container; the host talks HTTP over that socket. The folder
sits inside a private (0700) temporary folder of the host user, so no other host user reaches it;
the socket folder itself is 0700 too, so inside the container only root (the controller, with
CAP_DAC_OVERRIDE) and not the agent's account reaches it.

Inside the container the agent's apps run as the account `user` (the "uid" sandbox of
blindact.desktop.sandbox), the controller and the web apps as root with only the capabilities that
needs; `sandbox_kind` is what the server reports it runs, e.g. "container+uid".

Every container carries the label `blindact.desktop=1` plus its owner's host, pid and process start
time. Containers are removed by `close()`, by an atexit hook, by SIGINT/SIGTERM/SIGHUP handlers
(installed from the main thread) and, for an owner that died by SIGKILL, by the stale sweep the
next DockerDesktop start runs, or `blindact image prune`.

One DockerDesktop belongs to one thread at a time; several instances may run in parallel threads.
"""

from __future__ import annotations

import atexit
import io
import os
import shutil
import signal
import socket
import tarfile
import tempfile
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from blindact.actions import Action
from blindact.checks.result import CheckResult
from blindact.desktop.base import DesktopError, Observed, ResetTiming, SetupError
from blindact.desktop.docker_engine import DEFAULT_IMAGE, LABEL, docker_client, image_exists
from blindact.desktop.remote import RemoteDesktop

CONTAINER_SOCKET_DIR = "/run/blindact"
CONTAINER_DESKTOP_ROOT = "/tmp/desktop"
_SOCKET_NAME = "controller.sock"
_LABEL_HOST = "blindact.host"
_LABEL_PID = "blindact.owner_pid"
_LABEL_PID_START = "blindact.owner_start"
_LABEL_FOLDER = "blindact.socket_folder"
_FOLDER_PREFIX = "blindact-ctl-"
# What root in the container may still do: switch to the agent's account (SETUID, SETGID), stop its
# processes (KILL), and write, chown and remove the files in its home (CHOWN, DAC_OVERRIDE, FOWNER).
_CONTROLLER_CAPS = ["CHOWN", "DAC_OVERRIDE", "FOWNER", "KILL", "SETGID", "SETUID"]
_SANDBOXES = ("uid", "none")


class DockerUnavailable(DesktopError):
    """The Docker engine or the desktop image is not there."""


# --------------------------------------------------------------------------- owner identity


def _process_start(pid: int) -> str:
    """A pid's start time in clock ticks since boot: with the pid, names a process uniquely."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    return stat.rsplit(")", 1)[1].split()[19]


def _owner_labels() -> dict[str, str]:
    pid = os.getpid()
    return {LABEL: "1", _LABEL_HOST: socket.gethostname(), _LABEL_PID: str(pid), _LABEL_PID_START: _process_start(pid)}


def _owner_is_gone(labels: dict[str, str]) -> bool:
    if labels.get(_LABEL_HOST) != socket.gethostname():
        return False  # another machine's engine-sharing client; not ours to judge
    pid = int(labels.get(_LABEL_PID, "0") or 0)
    return pid <= 0 or _process_start(pid) != labels.get(_LABEL_PID_START)


# --------------------------------------------------------------------------- cleanup registry

_registry: dict[str, str] = {}  # container id -> socket folder, for every live container of this process
_registry_lock = threading.Lock()
_shutting_down = threading.Event()
_handlers_installed = False
_stale_swept = False
_handlers_lock = threading.Lock()


def _remove_container(client, cid: str) -> bool:
    import docker

    try:
        client.api.remove_container(cid, force=True, v=True)
        return True
    except docker.errors.NotFound:
        return False
    except docker.errors.APIError as exc:
        if "already in progress" in str(exc):
            return False
        raise


def _remove_registered() -> int:
    """Remove every container this process started; safe from a signal handler (no locks taken)."""
    items = list(_registry.items())
    if not items:
        return 0
    try:
        client = docker_client(DockerUnavailable)
    except DockerUnavailable:
        return 0

    def one(item: tuple[str, str]) -> bool:
        cid, folder = item
        try:
            return _remove_container(client, cid)
        finally:
            _registry.pop(cid, None)
            shutil.rmtree(folder, ignore_errors=True)

    with ThreadPoolExecutor(max_workers=min(8, len(items))) as pool:
        return sum(pool.map(one, items))


def cleanup_containers(*, client=None, stale_only: bool = False) -> int:
    """Remove blindact desktop containers: all of them, or with stale_only those whose owner died.

    Returns how many were removed.
    """
    client = client or docker_client(DockerUnavailable)
    removed = 0
    # the low-level listing: the high-level one inspects each container and fails on one that
    # another cleanup removes meanwhile
    for c in client.api.containers(all=True, filters={"label": f"{LABEL}=1"}):
        if stale_only and not _owner_is_gone(c.get("Labels") or {}):
            continue
        if _remove_container(client, c["Id"]):
            removed += 1
        _registry.pop(c["Id"], None)
        folder = (c.get("Labels") or {}).get(_LABEL_FOLDER, "")
        # only ever a folder this module made (a dead owner could not remove its own)
        if Path(folder).name.startswith(_FOLDER_PREFIX) and Path(folder).is_dir():
            shutil.rmtree(folder, ignore_errors=True)
    return removed


def _on_exit() -> None:
    _shutting_down.set()  # no worker may start a new container once the program is ending
    _remove_registered()


def _on_signal(signum, frame, previous) -> None:
    _shutting_down.set()
    _remove_registered()
    if callable(previous):
        previous(signum, frame)
    elif previous == signal.SIG_IGN:
        return
    else:
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)


def install_cleanup_handlers() -> bool:
    """Remove this process's containers at exit and on SIGINT/SIGTERM/SIGHUP (then chain to the
    previous handler, so Ctrl-C still raises KeyboardInterrupt). Signal handlers can only be set
    from the main thread: a runner that makes desktops in worker threads should call this first.
    Returns whether the signal handlers are in place."""
    global _handlers_installed
    with _handlers_lock:
        if _handlers_installed:
            return True
        if not getattr(install_cleanup_handlers, "_atexit", False):
            atexit.register(_remove_registered)
            # Interpreter exit joins non-daemon threads (a ThreadPoolExecutor's workers) *before*
            # atexit runs; workers stuck in endless episodes would then wait forever on containers
            # that only atexit removes. Threading's own exit hooks run first, newest first.
            register_early = getattr(threading, "_register_atexit", None)
            if register_early is not None:
                try:
                    register_early(_on_exit)
                except RuntimeError:
                    pass  # already shutting down; plain atexit still runs
            install_cleanup_handlers._atexit = True  # type: ignore[attr-defined]
        if threading.current_thread() is not threading.main_thread():
            return False
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            previous = signal.getsignal(sig)
            signal.signal(sig, lambda s, f, prev=previous: _on_signal(s, f, prev))
        _handlers_installed = True
        return True


def shutting_down() -> bool:
    return _shutting_down.is_set()


# --------------------------------------------------------------------------- the provider


class DockerDesktop:
    """A desktop in its own container. Implements the Desktop protocol.

    sandbox: "uid" (the agent's apps as a user of their own, the default) or "none" (as the
    controller: only when asked for explicitly)."""

    def __init__(
        self,
        image: str = DEFAULT_IMAGE,
        width: int = 1280,
        height: int = 720,
        *,
        memory: str = "3g",
        tmp_size: str = "1g",
        cpus: float | None = 1.5,
        shm_size: str = "512m",
        pids_limit: int = 1024,
        network: str = "none",
        sandbox: str = "uid",
        ready_timeout: float = 30.0,
        reset_timeout: float = 120.0,
        client=None,
    ):
        self.image = image
        self.width = width
        self.height = height
        self.memory = memory
        self.tmp_size = tmp_size
        self.cpus = cpus
        self.shm_size = shm_size
        self.pids_limit = pids_limit
        self.network = network
        if sandbox not in _SANDBOXES:
            raise ValueError(f"sandbox {sandbox!r}: a desktop container runs the agent's apps with one of "
                             f"{', '.join(_SANDBOXES)}")
        self.sandbox = sandbox
        # what the server says it runs, once started; until then what was asked for
        self.sandbox_kind = f"container+{sandbox}"
        self.limits_description = (f"container memory {memory}, pids {pids_limit}, /tmp {tmp_size} tmpfs, "
                                   f"shm {shm_size}, network {network}")
        self.ready_timeout = ready_timeout
        self.reset_timeout = reset_timeout
        self._client = client
        self.container_id: str | None = None
        self._folder: Path | None = None
        self._share: Path | None = None
        self._remote: RemoteDesktop | None = None
        self.start_seconds: float | None = None
        self.restarts = 0

    # ---------------------------------------------------------------- lifecycle
    @property
    def client(self):
        if self._client is None:
            self._client = docker_client(DockerUnavailable)
        return self._client

    @property
    def short_id(self) -> str:
        return (self.container_id or "?")[:12]

    def __enter__(self) -> "DockerDesktop":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def start(self) -> None:
        if self.container_id is not None:
            return
        if _shutting_down.is_set():
            if threading.current_thread() is not threading.main_thread():
                raise DesktopError("blindact is shutting down (interrupted); no new desktop container is started")
            # the main thread starting a desktop after an interruption is a new run (a notebook cell)
            _shutting_down.clear()
        install_cleanup_handlers()
        self._sweep_stale_once()
        import docker

        t0 = time.perf_counter()
        try:
            self.client.images.get(self.image)
        except docker.errors.ImageNotFound:
            raise DockerUnavailable(f"desktop image {self.image!r} not found; build it with `blindact image build`") from None
        # tmpfs where there is one: screenshots pass through this folder as files
        shm = Path("/dev/shm")
        private = Path(tempfile.mkdtemp(prefix=_FOLDER_PREFIX, dir=shm if shm.is_dir() and os.access(shm, os.W_OK) else None))
        folder = private / "sock"
        folder.mkdir(mode=0o700)  # root in the container creates the socket here; the agent's account cannot enter
        self._folder = private
        self._share = folder
        kwargs: dict[str, Any] = dict(
            command=["--uds", f"{CONTAINER_SOCKET_DIR}/{_SOCKET_NAME}", "--root", CONTAINER_DESKTOP_ROOT,
                     "--width", str(self.width), "--height", str(self.height), "--sandbox", self.sandbox],
            name=f"blindact-desktop-{uuid.uuid4().hex[:10]}",
            labels={**_owner_labels(), _LABEL_FOLDER: str(private)},
            detach=True,
            init=True,  # reaps the apps' orphans; the server is not a good pid 1
            network_mode=self.network,
            mem_limit=self.memory,
            memswap_limit=self.memory,
            shm_size=self.shm_size,
            # the desktop's folders (the agent's home among them) and every other place the agent's account
            # can write are size-limited memory: a full disk is the container's, never the host's
            # exec: the desktop's home is under /tmp, and the agent's (and the tasks') scripts run from it;
            # Docker mounts a tmpfs noexec by default
            tmpfs={"/tmp": f"size={self.tmp_size},mode=1777,exec", "/var/tmp": "size=64m,mode=1777"},
            pids_limit=self.pids_limit,
            cap_drop=["ALL"],
            cap_add=_CONTROLLER_CAPS,
            security_opt=["no-new-privileges"],
            # lets the unprivileged forwarder serve the web apps on port 80 of the container's loopback
            sysctls={"net.ipv4.ip_unprivileged_port_start": "0"},
            volumes={str(folder): {"bind": CONTAINER_SOCKET_DIR, "mode": "rw"}},
        )
        if self.cpus:
            kwargs["nano_cpus"] = int(self.cpus * 1e9)
        try:
            container = self.client.containers.create(self.image, **kwargs)
        except docker.errors.APIError as exc:
            shutil.rmtree(private, ignore_errors=True)
            raise DesktopError(f"could not create a desktop container from {self.image}: {exc}") from exc
        self.container_id = container.id
        with _registry_lock:
            _registry[container.id] = str(private)
        try:
            if _shutting_down.is_set():
                raise DesktopError("blindact is shutting down (interrupted); desktop container not started")
            container.start()
            self._remote = RemoteDesktop.over_unix_socket(
                folder / _SOCKET_NAME, width=self.width, height=self.height, sandbox_kind=self.sandbox_kind,
                name=f"desktop container {self.short_id}", reset_timeout=self.reset_timeout, on_broken=self._broken)
            self._wait_ready(folder / _SOCKET_NAME)
            self.sandbox_kind = self._remote.sandbox_kind = self._reported_sandbox()
        except BaseException:
            self.close()
            raise
        self.start_seconds = time.perf_counter() - t0

    def _sweep_stale_once(self) -> None:
        global _stale_swept
        if _stale_swept:
            return
        _stale_swept = True
        try:
            cleanup_containers(client=self.client, stale_only=True)
        except Exception:  # noqa: BLE001 - a failed sweep must not stop a run; prune can finish it
            pass

    def _wait_ready(self, sock: Path) -> None:
        deadline = time.monotonic() + self.ready_timeout
        last = "no answer yet"
        while time.monotonic() < deadline:
            status, exit_code = self._status()
            if status not in ("created", "running"):
                raise DesktopError(
                    f"desktop container {self.short_id} {status} (exit code {exit_code}) before it was ready\n"
                    f"{self._log_tail()}")
            if sock.exists():
                try:
                    r = self._remote.http.get("/health", timeout=5.0)
                    if r.status_code == 200 and r.json().get("ok"):
                        return
                    last = r.text[:300]
                except httpx.TransportError as exc:
                    last = f"{type(exc).__name__}: {exc}"
            time.sleep(0.02)
        raise DesktopError(
            f"desktop container {self.short_id} not ready after {self.ready_timeout:.0f}s (last health answer: {last})\n"
            f"{self._log_tail()}")

    def _reported_sandbox(self) -> str:
        """The sandbox the server says it runs the agent's apps in; never a silent "none"."""
        kind = self._remote.request("GET", "/info", "reading the desktop's info").json().get("sandbox", "unknown")
        if kind != self.sandbox:
            raise DesktopError(f"desktop container {self.short_id} runs the agent's apps with sandbox {kind!r}, "
                               f"not the {self.sandbox!r} asked for")
        return f"container+{kind}"

    def close(self) -> None:
        if self._remote is not None:
            self._remote.close()
            self._remote = None
        cid, self.container_id = self.container_id, None
        if cid is not None:
            try:
                _remove_container(self.client, cid)
            finally:
                with _registry_lock:
                    _registry.pop(cid, None)
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = self._share = None

    def restart(self) -> None:
        self.close()
        self.restarts += 1
        self.start()

    # ---------------------------------------------------------------- diagnostics
    def _status(self) -> tuple[str, int | None]:
        import docker

        if self.container_id is None:
            return "closed", None
        try:
            state = self.client.api.inspect_container(self.container_id)["State"]
        except docker.errors.NotFound:
            return "removed", None
        return state.get("Status", "unknown"), state.get("ExitCode")

    def _log_tail(self, lines: int = 30) -> str:
        """The server's own output plus the desktop processes' logs, for error messages."""
        import docker

        if self.container_id is None:
            return "(no container)"
        parts = []
        try:
            out = self.client.api.logs(self.container_id, tail=lines).decode(errors="replace").rstrip()
            parts.append(f"--- container {self.short_id} log (last {lines} lines) ---\n{out or '(empty)'}")
            stream, _ = self.client.api.get_archive(self.container_id, f"{CONTAINER_DESKTOP_ROOT}/logs")
            with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as tar:
                for member in tar.getmembers():
                    if member.isfile() and member.name.endswith(".log"):
                        text = tar.extractfile(member).read().decode(errors="replace").rstrip()  # type: ignore[union-attr]
                        if text:
                            tail = "\n".join(text.splitlines()[-8:])
                            parts.append(f"--- {member.name} ---\n{tail}")
        except docker.errors.NotFound:
            parts.append(f"(container {self.short_id} is gone; no logs)")
        except (docker.errors.APIError, tarfile.TarError) as exc:
            parts.append(f"(could not read logs of {self.short_id}: {exc})")
        return "\n".join(parts)

    def _broken(self, what: str, exc: Exception) -> DesktopError:
        status, exit_code = self._status()
        if _shutting_down.is_set():
            return DesktopError(f"desktop container {self.short_id} was stopped (interrupted) during {what}")
        return DesktopError(
            f"desktop container {self.short_id} failed during {what}: {type(exc).__name__}: {exc} "
            f"(container {status}, exit code {exit_code})\n{self._log_tail()}")

    # ---------------------------------------------------------------- Desktop protocol
    @property
    def remote(self) -> RemoteDesktop:
        if self._remote is None:
            raise DesktopError("the desktop container is not started (call start() first)")
        return self._remote

    def reset(self, setup: list[dict]) -> ResetTiming:
        """Reuse the running container (the session restores files and app state); start a fresh one
        only when there is none or it is broken."""
        t0 = time.perf_counter()
        phases: dict[str, float] = {}
        if self.container_id is None:
            self.start()
            phases["container_start"] = self.start_seconds or 0.0
        elif not self._healthy():
            self.restart()
            phases["container_restart"] = self.start_seconds or 0.0
        try:
            timing = self.remote.reset(setup)
        except SetupError:
            raise
        except DesktopError:
            # a desktop that broke during the reset gets one fresh container before we give up
            self.restart()
            phases["container_restart"] = self.start_seconds or 0.0
            timing = self.remote.reset(setup)
        phases.update(timing.phases)
        return ResetTiming(time.perf_counter() - t0, phases)

    def _healthy(self) -> bool:
        try:
            return all(self.health().values())
        except DesktopError:
            return False

    def execute(self, action: Action) -> None:
        self.remote.execute(action)

    def settle(self, max_wait: float = 1.5) -> float:
        return self.remote.settle(max_wait)

    def step(self, actions: list[Action]) -> Observed:
        return self.remote.step(actions)

    def screenshot(self) -> np.ndarray:
        return self.remote.screenshot()

    def accessibility_tree(self) -> str:
        return self.remote.accessibility_tree()

    def show_message(self, title: str, text: str) -> None:
        self.remote.show_message(title, text)

    def run_checks(self, checks: list[dict]) -> list[CheckResult]:
        return self.remote.run_checks(checks)

    def health(self) -> dict[str, bool]:
        status, _ = self._status()
        if status != "running":
            return {"container": False}
        return {"container": True, **self.remote.health()}


def preflight(image: str = DEFAULT_IMAGE, **_options) -> None:
    """Raise DockerUnavailable, saying what to do, when the engine or the desktop image is missing."""
    client = docker_client(DockerUnavailable)
    if not image_exists(client, image):
        raise DockerUnavailable(f"the desktop image {image!r} is not built; build it with `blindact image build`")
