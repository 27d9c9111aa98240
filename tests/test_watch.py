"""The live view (`blindact run|compare --watch [PORT]`, blindact.run.watch): a real run watched from
headless Chromium shows each worker's screen and steps as they happen and the finished episodes with
their viewers; the server answers on 127.0.0.1 only, serves the latest screenshot and nothing outside
the run's report and episode folders."""

from __future__ import annotations

import io
import json
import os
import pty
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from PIL import Image

from blindact.cli.options import EXIT_USAGE
from blindact.endings import End
from blindact.run.episode import EpisodeResult, EpisodeSpec
from blindact.run.store import episode_page
from blindact.run.watch import Board, WatchServer
from blindact.tasks import select_tasks
from blindact.trajectory import Trajectory
from tests.conftest import needs_desktop

# 3 tasks x 2 agents: 6 short episodes (4 to 9 steps) over 2 workers
TASKS = "pilot-*"
AGENTS = "scripted:bgd/complete,scripted:safe/complete"

PANELS = """() => [...document.querySelectorAll('.panel')].map(p =>
    p.querySelector('.counter').textContent + ' | ' + p.querySelector('.actions').textContent)"""
SCREEN_SHOWN = """() => [...document.querySelectorAll('.panel img.shot')].some(i => i.complete && i.naturalWidth > 0)"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _until(probe, timeout: float, what: str):
    """probe()'s first truthy value within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = probe()
        if value:
            return value
        time.sleep(0.3)
    raise AssertionError(f"not within {timeout:.0f}s: {what}")


def _listeners(port: int) -> list[str]:
    """The addresses listening on `port` (IPv4 as dotted quads; any IPv6 listener as 'ipv6')."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, hex_port = local.rsplit(":", 1)
            if state == "0A" and int(hex_port, 16) == port:
                found.append(socket.inet_ntoa(bytes.fromhex(address)[::-1]) if table.endswith("tcp") else "ipv6")
    return found


def _other_address() -> str | None:
    """This machine's address on its network (not loopback), if it has one."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.1", 9))  # a UDP connect sends nothing: it only picks the outgoing interface
            address = s.getsockname()[0]
        except OSError:
            return None
    return None if address.startswith("127.") else address


def _assert_loopback_only(port: int) -> None:
    assert _listeners(port) == ["127.0.0.1"]
    other = _other_address()
    if other:
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection((other, port), timeout=5).close()


@needs_desktop
@pytest.mark.timeout(900)  # 6 episodes and a report: about a minute alone, several on a loaded machine
def test_a_watched_run_shows_each_worker_live_then_links_its_finished_episodes(tmp_path):
    from blindact.headless import chromium_page
    from blindact.report.check import check_page, watch

    port, url = _free_port(), None
    stderr = tmp_path / "stderr.txt"
    master, terminal = pty.openpty()  # stdin a terminal: the view stays up after the run until Enter
    with open(stderr, "w") as err:
        proc = subprocess.Popen([sys.executable, "-m", "blindact", "compare", "--tasks", TASKS, "--agents", AGENTS,
                                 "--workers", "2", "--watch", str(port), "--run-dir", str(tmp_path / "run")],
                                stdin=terminal, stdout=subprocess.DEVNULL, stderr=err)
    try:
        url = _until(lambda: f"http://127.0.0.1:{port}/" in stderr.read_text() and f"http://127.0.0.1:{port}/",
                     120, "the live view's URL printed at the start")
        with chromium_page(1400, 1000) as page:
            page.goto(url)
            _until(lambda: page.evaluate(SCREEN_SHOWN), 180, "a worker's screenshot on the page")
            first = page.evaluate(PANELS)
            assert any("step " in p and " of " in p and "episode " in p for p in first), first
            _until(lambda: page.evaluate(PANELS) != first, 60, f"the panels to change from {first}")
            _assert_loopback_only(port)

            _until(lambda: "press Enter" in stderr.read_text(), 600, "the run and its report to finish")
            assert page.locator(".panel").count() == 2  # one per worker
            viewers = _until(lambda: (links := page.eval_on_selector_all("#finished a.viewer", "els => els.map(e => e.href)"))
                             and len(links) == 6 and links, 30, "six finished episodes linked to their viewers")
            assert "6 of 6 episodes finished" in page.inner_text("#progress")
            problems: list[str] = []
            watch(page, problems)
            check_page(page, viewers[0], problems)  # the viewer opens from the live view, screenshots and all
            assert not problems and page.locator("img").count() >= 4, problems
    finally:
        os.write(master, b"\n")
        proc.wait(timeout=120)
        os.close(master)
        os.close(terminal)
    assert proc.returncode == 0, stderr.read_text()


def _png(color: str) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (8, 4), color).save(out, format="PNG")
    return out.getvalue()


def _get(url: str, host: str | None = None) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers={"Host": host} if host else {}),
                                    timeout=10) as reply:
            return reply.status, reply.read()
    except urllib.error.HTTPError as exc:
        return exc.code, b""


def test_the_server_shows_the_latest_step_links_finished_episodes_and_serves_nothing_else(tmp_path):
    run = tmp_path / "run"
    (run / "episodes" / "ep").mkdir(parents=True)
    (run / "episodes" / "ep" / "step_001.png").write_bytes(_png("blue"))
    (run / "results.sqlite").write_text("secret")
    task = select_tasks("pilot-ambiguity-cleanup-script")[0]
    specs = [EpisodeSpec(task, "scripted:bgd"), EpisodeSpec(task, "scripted:safe")]
    board = Board(run, specs)
    trajectory = Trajectory(meta={})
    trajectory.add_step({"step": 0}, _png("red"))
    trajectory.add_step({"step": 1, "actions": [{"type": "type", "text": "ls\n"}], "thought": "look first"}, _png("blue"))
    board.stepped(1, specs[1], trajectory)
    with WatchServer(board) as server:
        port = server.httpd.server_address[1]
        state = json.loads(_get(server.url + "state.json")[1])
        assert _get(server.url + "shot/1.png") == (200, _png("blue"))  # the latest step's screen, not the first
        assert _get(server.url + "shot/0.png")[0] == 404  # worker 0 has shown nothing yet
        assert _get(server.url + "episodes/ep/step_001.png") == (200, _png("blue"))
        for escape in ("episodes/../results.sqlite", "episodes/%2e%2e/results.sqlite", "results.sqlite"):
            assert _get(server.url + escape)[0] == 404, escape
        # a page elsewhere whose host name was rebound to this machine reads nothing
        assert _get(server.url + "shot/1.png", host=f"attacker.example:{port}")[0] == 403
        assert _get(server.url + "state.json", host=f"localhost:{port}")[0] == 200
        _assert_loopback_only(port)
    panel = state["workers"][0]
    assert (panel["worker"], panel["step"], panel["max_steps"], panel["episode"], panel["episodes"]) == (2, 1, 20, 2, 2)
    assert panel["thought"] == "look first" and panel["actions"] == [{"step": 1, "lines": ["type(text='ls\\n')"], "error": ""}]
    board.finished(specs[1], EpisodeResult(End.DONE, 1, trajectory=trajectory))
    row = board.state()["finished"][0]
    assert (row["episode"], row["end"], row["steps"]) == (2, "done", 1)
    assert row["viewer"] is None and row["final"] is None  # no report, no episode folder yet: no link
    folder = run / "episodes" / specs[1].name
    folder.mkdir()
    (folder / "step_001.png").write_bytes(_png("blue"))
    (run / "report" / "episodes").mkdir(parents=True)
    (run / "report" / "episodes" / episode_page("run", specs[1].name)).write_text("<html></html>")
    row = board.state()["finished"][0]
    assert row["final"] == f"/episodes/{specs[1].name}/step_001.png"
    assert row["viewer"] == f"/report/episodes/{episode_page('run', specs[1].name)}"


def test_a_busy_port_is_a_usage_error_before_anything_runs(tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        proc = subprocess.run([sys.executable, "-m", "blindact", "run", "--tasks", "pilot-ambiguity-cleanup-script",
                               "--watch", str(port), "--run-dir", str(tmp_path / "r")],
                              capture_output=True, text=True, timeout=120)
    assert proc.returncode == EXIT_USAGE, proc.stderr
    assert f"--watch {port}" in proc.stderr and "run folder:" not in proc.stderr
    assert not (tmp_path / "r" / "results.sqlite").exists()
