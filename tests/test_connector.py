"""The controller opens only the D-Bus sockets of the desktop's runtime folder, whatever address an app
announces; where the sandbox has a uid of its own, a helper running as that uid connects for it."""

from __future__ import annotations

import os
import socket
import threading

import pytest

from blindact.desktop.connector import Connector, RefusedAddress, SocketPolicy


def _listen(path) -> socket.socket:
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(4)
    return server


def test_addresses_outside_the_runtime_folder_are_refused(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    outside = _listen(tmp_path / "host.sock")
    tcp = socket.socket()
    tcp.bind(("127.0.0.1", 0))
    tcp.listen(1)
    tcp.settimeout(0.5)
    policy = SocketPolicy(run)
    try:
        for address in (f"unix:path={tmp_path / 'host.sock'}", f"unix:path={run}/../host.sock",
                        f"tcp:host=127.0.0.1,port={tcp.getsockname()[1]}", "unix:abstract=/tmp/x"):
            with pytest.raises(RefusedAddress):
                policy.open(address, 1.0)
        with pytest.raises(socket.timeout):
            tcp.accept()  # nothing ever connected
        inside = _listen(run / "bus")
        policy.open(f"unix:path={run / 'bus'},guid=0", 1.0).close()
        inside.close()
    finally:
        outside.close()
        tcp.close()


@pytest.mark.skipif(os.geteuid() != 0, reason="switching to another uid needs root")
def test_the_helper_connects_as_the_sandboxs_uid():
    import tempfile
    from pathlib import Path

    uid = 1_700_099_999
    top = Path(tempfile.mkdtemp())  # under the test run's TMPDIR, which the sandbox's uid may pass through
    os.chmod(top, 0o711)
    run = top / "run"
    run.mkdir()
    os.chown(run, uid, uid)
    server = _listen(run / "bus")
    os.chmod(run / "bus", 0o777)
    seen = {}

    def accept() -> None:
        conn, _ = server.accept()
        creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)
        seen["uid"] = int.from_bytes(creds[4:8], "little")
        conn.close()

    thread = threading.Thread(target=accept)
    thread.start()
    connector = Connector(uid, uid)
    try:
        SocketPolicy(run, connector).open(f"unix:path={run / 'bus'}", 2.0).close()
        thread.join(5)
        assert seen["uid"] == uid  # the bus would see the sandbox's own user, not root
    finally:
        connector.close()
        server.close()
