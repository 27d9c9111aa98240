"""Opening the agent's D-Bus sockets for the controller, on the agent's terms and no further.

The controller reads the accessibility tree over D-Bus: the accessibility bus, and each app's own
direct socket, whose address the app itself announces. Two things follow:

- An announced address is the agent's to choose. Followed blindly, the controller (root, in the host's
  network) would connect wherever it says: a TCP port anywhere, or a host socket such as the Docker
  engine's. `SocketPolicy` allows unix socket files inside the desktop's runtime folder only.
- Those buses only let in their own user (and root, which the local sandbox's user namespace does not
  know). Where the agent runs as a uid of its own, `Connector` keeps one small helper process running as
  that uid, outside the sandbox's namespaces (so the agent can neither see nor signal it): it connects
  and hands the connected socket back (SCM_RIGHTS). The bus then sees the agent's own uid and lets the
  controller in; the controller reads and writes the socket itself.
"""

from __future__ import annotations

import array
import os
import socket
import shutil
import subprocess
import threading
from pathlib import Path

from blindact.desktop.procs import Confinement, popen

# the whole helper: it only connects, never reads what comes over the socket
_HELPER = r"""
import array, os, socket, sys
ctl = socket.socket(fileno=int(sys.argv[1]))
while True:
    path = ctl.recv(4096)
    if not path:
        break
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(2.0)
    try:
        s.connect(path)
    except OSError as exc:
        ctl.send(b"E%d" % (exc.errno or 0))
    else:
        ctl.sendmsg([b"K"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [s.fileno()]))])
    finally:
        s.close()
"""


class RefusedAddress(OSError):
    """An address the controller will not connect to (outside the desktop's runtime folder, or not a
    unix socket file)."""


class SocketPolicy:
    """Which D-Bus addresses the controller may open: unix socket files under `allowed` (the runtime folder, and
    `also` others such as the private folders of the agent's programs)."""

    def __init__(self, allowed: Path, connector: "Connector | None" = None, also: tuple[Path, ...] = ()):
        self.allowed = tuple(Path(os.path.realpath(p)) for p in (allowed, *also))
        self.connector = connector

    def open(self, address: str, timeout: float) -> socket.socket:
        errors = []
        for entry in filter(None, (e.strip() for e in address.split(";"))):
            transport, _, rest = entry.partition(":")
            params = dict(item.partition("=")[::2] for item in rest.split(",") if "=" in item)
            if transport != "unix" or "path" not in params:
                errors.append(f"{entry}: only unix socket files in the desktop's runtime folder are opened")
                continue
            path = Path(os.path.normpath(params["path"]))
            if not any(allowed in path.parents for allowed in self.allowed):
                errors.append(f"{entry}: outside the desktop's runtime folder {self.allowed[0]}")
                continue
            try:
                sock = self.connector.connect(str(path), timeout) if self.connector else _direct(str(path), timeout)
            except OSError as exc:
                errors.append(f"{entry}: {exc}")
                continue
            sock.settimeout(timeout)
            return sock
        raise RefusedAddress(f"cannot open D-Bus address {address!r}: " + "; ".join(errors))


def _direct(path: str, timeout: float) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(path)
    except OSError:
        sock.close()
        raise
    return sock


class Connector:
    """A helper process running as (uid, gid) that connects unix sockets for us (see the module doc)."""

    def __init__(self, uid: int, gid: int, confinement: Confinement | None = None):
        # the system's Python: the agent's uid may not reach this program's own (a virtualenv under /root)
        python = shutil.which("python3", path="/usr/bin:/bin")
        if python is None:
            raise OSError("the local sandbox needs /usr/bin/python3 (apt-get install python3) for its socket helper")
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        base = confinement or Confinement()
        confine = Confinement((uid, gid), base.cgroup_procs, base.rlimits)
        try:
            self._proc = popen(
                [python, "-I", "-S", "-c", _HELPER, str(theirs.fileno())], stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, pass_fds=(theirs.fileno(),), close_fds=True,
                cwd="/", preexec_fn=confine.apply, env={})
        finally:
            theirs.close()
        self._sock = ours
        self._lock = threading.Lock()

    @property
    def pid(self) -> int:
        return self._proc.pid

    def connect(self, path: str, timeout: float) -> socket.socket:
        with self._lock:
            self._sock.settimeout(timeout + 1.0)
            try:
                self._sock.send(os.fsencode(path))
                fds = array.array("i")
                data, ancillary, _, _ = self._sock.recvmsg(16, socket.CMSG_SPACE(fds.itemsize))
            except OSError as exc:
                raise OSError(f"the socket helper did not answer ({exc})") from None
        for level, kind, payload in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
        if data[:1] == b"K" and fds:
            return socket.socket(fileno=fds[0])
        for fd in fds:
            os.close(fd)
        code = int(data[1:] or b"0") if data[:1] == b"E" else 0
        raise OSError(code, os.strerror(code) if code else "the socket helper failed", path)

    def close(self) -> None:
        try:
            self._sock.close()
        finally:
            if self._proc.poll() is None:
                self._proc.kill()
            self._proc.wait(5)
