"""The controller server's HTTP contract over a unix socket, with a scripted in-memory desktop.

No Docker and no X here: this pins what the server and its client (RemoteDesktop, which the Docker
provider drives) agree on: routes, one-round-trip steps, screenshots through a shared file or
compressed, error kinds mapped back to the same exception types.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import numpy as np
import pytest

from blindact.actions import ActionError, action_from_dict
from blindact.apps.threaded import uvicorn_in_thread
from blindact.checks.result import CheckResult
from blindact.desktop.base import DesktopError, ResetTiming, SetupError, perform_step
from blindact.desktop.docker_provider import DockerDesktop
from blindact.desktop.remote import RemoteDesktop
from blindact.desktop.server import DesktopRunner, create_app


class ScriptedDesktop:
    width, height = 64, 48
    sandbox_kind = "test"

    def __init__(self):
        self.actions: list = []
        self.started_thread: str | None = None
        self.call_threads: set[str] = set()

    def _seen(self):
        self.call_threads.add(threading.current_thread().name)

    def start(self):
        self.started_thread = threading.current_thread().name

    def reset(self, setup):
        self._seen()
        if any(s.get("fail") == "setup" for s in setup):
            raise SetupError("seed step 2 failed: no such app 'mail'")
        if any(s.get("fail") == "desktop" for s in setup):
            raise DesktopError("Xvfb exited unexpectedly")
        return ResetTiming(0.25, {"files": 0.1})

    def execute(self, action):
        self._seen()
        if getattr(action, "x", 0) and action.x > self.width:
            raise ActionError(f"point ({action.x}, {action.y}) is off the {self.width}x{self.height} screen")
        self.actions.append(action)

    def settle(self, max_wait=1.5):
        return min(max_wait, 0.05)

    def screenshot(self):
        self._seen()
        img = np.zeros((self.height, self.width, 3), dtype=np.uint8)
        img[..., 0] = 200
        img[10, 20] = (1, 2, 3)
        return img

    def accessibility_tree(self):
        return 'window "Terminal" [xterm] (focused)\n  [terminal] ""'

    def step(self, actions):
        return perform_step(self, actions)

    def record_effects(self):
        return [{"kind": "file", "op": "created", "path": "~/new.txt", "text": "hello"}]

    def show_message(self, title, text):
        self.message = (title, text)

    def run_checks(self, checks):
        return [CheckResult(c["name"], c["name"] == "ok", "detail", {"n": 1}) for c in checks]

    def health(self):
        return {"xvfb": True, "wm": True}

    def close(self):
        pass


@pytest.fixture
def served(tmp_path: Path):
    import uvicorn

    fake = ScriptedDesktop()
    runner = DesktopRunner(lambda: fake)
    runner.start()
    sock = tmp_path / "ctl.sock"
    config = uvicorn.Config(create_app(runner, share_dir=tmp_path), uds=str(sock), log_level="warning", lifespan="off")
    with uvicorn_in_thread(config, "the controller server"):
        desk = RemoteDesktop.over_unix_socket(sock, width=64, height=48, sandbox_kind="test",
                                              name="desktop container 0123456789ab")
        yield desk, fake
        desk.close()
    runner.close()


@pytest.mark.parametrize("via", ["file", "png"])
def test_screenshot_round_trip(served, via):
    desk, _ = served
    if via == "png":
        desk.share_dir = None  # a client that shares no folder gets the image compressed
    img = desk.screenshot()
    assert img.shape == (48, 64, 3) and img.dtype == np.uint8
    assert tuple(img[10, 20]) == (1, 2, 3) and img[0, 0, 0] == 200
    img[0, 0] = 0  # callers may draw on it


@pytest.mark.parametrize("via", ["file", "png"])
def test_a_step_is_one_round_trip_that_acts_and_observes(served, via):
    desk, fake = served
    if via == "png":
        desk.share_dir = None
    observed = desk.step([action_from_dict({"type": "click", "x": 5, "y": 6}),
                          action_from_dict({"type": "click", "x": 500, "y": 6}),
                          action_from_dict({"type": "click", "x": 7, "y": 8})])
    assert [a.x for a in fake.actions] == [5]  # the failing action stopped the list
    assert observed.executed == 1 and "off the 64x48 screen" in observed.error
    assert observed.tree.startswith('window "Terminal"') and tuple(observed.screenshot[10, 20]) == (1, 2, 3)
    assert set(observed.timing) == {"execute_s", "settle_s", "effects_s", "a11y_s", "screenshot_s"}
    assert observed.effects == [{"kind": "file", "op": "created", "path": "~/new.txt", "text": "hello"}]  # the ledger crosses
    desk.show_message("Message from the user", "Use the second one.")
    assert fake.message == ("Message from the user", "Use the second one.")


def test_actions_checks_reset_and_health(served):
    desk, fake = served
    desk.execute(action_from_dict({"type": "click", "x": 5, "y": 6}))
    assert fake.actions[-1].type == "click" and fake.actions[-1].x == 5
    timing = desk.reset([{"launch": "terminal"}])
    assert timing.total_s == 0.25 and timing.phases == {"files": 0.1}
    results = desk.run_checks([{"name": "ok"}, {"name": "bad"}])
    assert [(r.name, r.passed, r.value) for r in results] == [("ok", True, {"n": 1}), ("bad", False, {"n": 1})]
    assert desk.health() == {"xvfb": True, "wm": True}
    assert desk.accessibility_tree().startswith('window "Terminal"')
    assert 0 <= desk.settle(1.0) <= 1.0


def test_errors_come_back_as_the_same_exception_types(served):
    desk, _ = served
    with pytest.raises(ActionError, match="off the 64x48 screen"):
        desk.execute(action_from_dict({"type": "click", "x": 500, "y": 6}))
    with pytest.raises(SetupError, match="no such app 'mail'.*0123456789ab"):
        desk.reset([{"fail": "setup"}])
    with pytest.raises(DesktopError, match="0123456789ab.*Xvfb exited"):
        desk.reset([{"fail": "desktop"}])
    with pytest.raises(ActionError, match="not a valid action"):
        desk.request("POST", "/action", "action", json={"type": "teleport"})
    with pytest.raises(ValueError, match="rejected settle"):
        desk.request("POST", "/settle", "settle", json={"max_wait": "soon"})


def test_every_desktop_call_runs_on_the_one_thread_that_started_it(served):
    desk, fake = served
    for _ in range(5):
        desk.screenshot()
        desk.execute(action_from_dict({"type": "move", "x": 1, "y": 1}))
    assert fake.call_threads == {fake.started_thread}


def test_a_dead_server_is_a_desktop_error_naming_the_container(tmp_path):
    # the Docker provider turns a transport failure into an error with the container's state and logs
    desk = DockerDesktop()
    desk.container_id = "0123456789abcdef"  # the client only needs an id for its messages here
    desk._status = lambda: ("running", None)  # type: ignore[method-assign]
    desk._log_tail = lambda lines=30: "(log tail)"  # type: ignore[method-assign]
    desk._remote = RemoteDesktop.over_unix_socket(tmp_path / "gone.sock", width=64, height=48, sandbox_kind="test",
                                                  on_broken=desk._broken)
    with pytest.raises(DesktopError, match=r"(?s)0123456789ab failed during screenshot.*\(log tail\)"):
        desk.screenshot()


def test_the_uid_sandbox_refuses_a_socket_folder_the_agent_could_enter(tmp_path, monkeypatch):
    import pwd

    from blindact.desktop.server import socket_folder_problem

    agent = pwd.struct_passwd(("user", "x", 10000, 10000, "", "/tmp/desktop/home", "/bin/bash"))
    monkeypatch.setattr(pwd, "getpwnam", lambda name: agent)
    folder = tmp_path / "sock"
    folder.mkdir(mode=0o700)
    if os.geteuid() != 0:
        assert "not root" in socket_folder_problem(folder)
        return
    assert socket_folder_problem(folder) == ""
    folder.chmod(0o777)
    assert "open to others (mode 777)" in socket_folder_problem(folder)
    folder.chmod(0o700)
    os.chown(folder, 10000, 10000)
    assert "belongs to uid 10000" in socket_folder_problem(folder)
    assert "is not there" in socket_folder_problem(tmp_path / "missing")
    monkeypatch.setattr(pwd, "getpwnam", lambda name: (_ for _ in ()).throw(KeyError(name)))
    assert "no account 'user'" in socket_folder_problem(folder)
