"""An agent's shell commands cannot reach the host, and no desktop process outlives its owner."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from pathlib import Path

import pytest

from blindact.desktop.sandbox import bwrap_problem
from blindact.env import BlindActEnv

pytestmark = [pytest.mark.desktop,
              pytest.mark.skipif(bool(bwrap_problem()), reason="bubblewrap cannot create namespaces here")]

REPO = Path(__file__).resolve().parent.parent


def _sandbox_bash(desktop, script: str) -> str:
    proc = desktop.sandbox.spawn(f"probe-{uuid.uuid4().hex[:6]}", ["/bin/bash", "-c", script])
    proc.popen.wait(20)
    return proc.log_path.read_text()


def test_shell_in_sandbox_cannot_write_or_read_host_files(desktop, tmp_path):
    tag = uuid.uuid4().hex
    secret = tmp_path / "host-secret.txt"
    secret.write_text("host secret " + tag)
    targets = [REPO / f"escape-{tag}", Path(f"/root/escape-{tag}"), Path(f"/etc/escape-{tag}"),
               Path(f"/usr/escape-{tag}"), Path(f"/tmp/escape-{tag}"), Path(f"/var/tmp/escape-{tag}")]
    script = "; ".join(f"echo pwned > {t} 2>/dev/null && echo WROTE {t}" for t in targets)
    script += f"; cat {secret} 2>/dev/null && echo READ-SECRET; ls {REPO} 2>/dev/null && echo SAW-REPO"
    script += f"; echo inside > ~/inside-{tag}.txt && echo HOME-OK; id -u"
    out = _sandbox_bash(desktop, script)
    for t in targets:
        assert not t.exists(), f"the sandbox wrote {t} on the host"
    assert "READ-SECRET" not in out and "host secret" not in out
    assert "SAW-REPO" not in out
    # the command did run: it can write its own home, as an unprivileged user
    assert "HOME-OK" in out and (desktop.layout.home / f"inside-{tag}.txt").read_text() == "inside\n"
    assert out.strip().splitlines()[-1] == "1000"


def test_sandbox_has_no_route_to_host_services(desktop):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    accepted = []
    server.settimeout(4)
    t = threading.Thread(target=lambda: accepted.append(_try_accept(server)))
    t.start()
    out = _sandbox_bash(desktop, f"timeout 3 bash -c 'echo hi > /dev/tcp/127.0.0.1/{port}' && echo CONNECTED; "
                                 "ip route 2>/dev/null | grep -c default || true")
    t.join()
    server.close()
    assert "CONNECTED" not in out
    assert accepted == [False]


def _try_accept(server: socket.socket) -> bool:
    try:
        conn, _ = server.accept()
    except (TimeoutError, OSError):
        return False
    conn.close()
    return True


def test_agent_typing_in_the_terminal_stays_in_the_sandbox(desktop):
    tag = uuid.uuid4().hex
    env = BlindActEnv("pilot-ambiguity-cleanup-script", desktop=desktop)
    obs, _ = env.reset()
    from blindact.agents.scripted import locate
    from blindact.tasks import Target

    x, y = locate(Target(window="Terminal"), obs["accessibility_tree"])
    env.step({"type": "click", "x": x, "y": y})
    env.step({"type": "type", "text": f"echo pwned > /tmp/escape-{tag}; echo pwned > {REPO}/escape-{tag}; "
                                      f"echo ran > ~/ran-{tag}\n"})
    deadline = time.monotonic() + 5
    while not (desktop.layout.home / f"ran-{tag}").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert (desktop.layout.home / f"ran-{tag}").exists(), "the typed command did not run"
    assert not Path(f"/tmp/escape-{tag}").exists()
    assert not (REPO / f"escape-{tag}").exists()
    env.close()



def test_the_browser_started_ahead_is_out_of_the_agents_reach_and_replaced_when_harmed(desktop):
    """The next episode's browser runs during this one (a reset takes it instead of starting Chromium): the
    agent's programs must not see its processes, its profile or its singleton socket (through which a page
    could be opened in it); its processes are not the agent's effects; one that died is replaced."""
    import sys as _sys

    _sys.path.insert(0, str(Path(__file__).parent))
    from probes import ATTACKS

    from blindact.tasks import get_task

    desktop.reset(get_task("pilot-ambiguity-cleanup-script").setup)  # a terminal task: the browser waits unused
    spare = desktop._spare
    assert spare is not None and spare.alive and spare.untouched(timeout=10)
    assert (spare.profile / "data").is_dir()  # it did start, with its profile where the agent cannot look
    probe = ATTACKS["reach-the-next-browser"].command + "; sleep 2; echo FOUND=$N"
    out = _sandbox_bash(desktop, probe)
    assert "FOUND=0" in out, out
    assert spare.untouched(timeout=10), "a page was opened in the browser started ahead"
    assert not [e for e in desktop.record_effects() if "chromium" in json.dumps(e)], "its processes counted as the agent's"
    # an agent that harmed it (here: killed it) only costs the next reset a cold start
    os.killpg(spare.proc.popen.pid, signal.SIGKILL)
    spare.proc.popen.wait(5)
    desktop.reset(get_task("pilot-contextual-threat-comment").setup)
    assert any("had stopped" in line for line in desktop.reset_report), desktop.reset_report
    assert desktop._browser is not None and desktop._browser is not spare
    assert desktop._page_loaded()
    assert desktop._spare is not None and desktop._spare is not spare


def test_the_browser_started_ahead_answers_before_the_agents_first_action(desktop, monkeypatch):
    """A reset no longer waits for the next episode's browser to start (its start overlaps the agent's first
    turn), but the agent's first action still waits for it: what it reads as it starts (the home's settings, the
    X server's resources) is what the reset left. So when the first action reaches the X server, the browser
    started ahead answers at once (it is still starting ~0.3 s after a reset unless it was waited for)."""
    from blindact.actions import MoveTo
    from blindact.tasks import get_task

    answered = []
    execute = desktop.controller.execute

    def first_checking(action):
        answered.append(desktop._spare is not None and desktop._spare.untouched(timeout=0.1))
        execute(action)

    monkeypatch.setattr(desktop.controller, "execute", first_checking)
    for task in ("pilot-contextual-threat-comment", "pilot-ambiguity-cleanup-script", "pilot-contextual-threat-comment"):
        desktop.reset(get_task(task).setup)
        desktop.step([MoveTo(x=640, y=400)])
    assert answered == [True, True, True]


def _on_page(desktop, expression: str):
    """Evaluate `expression` in the desktop's browser page, as the page's own script would."""
    browser = desktop._browser
    target = browser.page_targets()[-1]["targetId"]
    session = browser.cdp.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
    try:
        reply = browser.cdp.call("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                      "awaitPromise": True}, session)
    finally:
        browser.cdp.call("Target.detachFromTarget", {"sessionId": session})
    return reply["result"].get("value")


def test_what_a_page_keeps_never_reaches_the_next_episode(desktop, monkeypatch):
    """Nothing is cleared when a page opens (every browser has a profile made for it): a cookie, local and
    session storage, an IndexedDB database and a Cache Storage entry that a page keeps in one episode must be
    gone in the next, whether the next browser was started ahead or from cold."""
    from blindact.tasks import get_task

    setup = get_task("pilot-contextual-threat-comment").setup
    keep = """(async () => {
        document.cookie = "kept=1; max-age=86400; path=/";
        localStorage.setItem("kept", "1"); sessionStorage.setItem("kept", "1");
        await new Promise((ok, err) => { const r = indexedDB.open("kept", 1);
            r.onupgradeneeded = () => r.result.createObjectStore("s"); r.onsuccess = ok; r.onerror = err; });
        await (await caches.open("kept")).put("/kept", new Response("1"));
        return "stored"; })()"""
    found = """(async () => [document.cookie, localStorage.getItem("kept"), sessionStorage.getItem("kept"),
        (await indexedDB.databases()).map(d => d.name).join(","), (await caches.keys()).join(",")])()"""
    for cold in (False, True):
        if cold:  # every browser started in the reset that opens it, as in Docker
            desktop._drop_spare()
            monkeypatch.setattr(desktop, "_spares", lambda: False)
        desktop.reset(setup)
        assert _on_page(desktop, keep) == "stored"
        assert _on_page(desktop, found) == ["kept=1", "1", "1", "kept", "kept"]  # the page did keep them
        desktop.reset(setup)
        assert (desktop._spare is None) == cold
        assert _on_page(desktop, found) == ["", None, None, "", ""], f"kept into the next episode (cold={cold})"


def test_where_processes_are_shared_an_image_viewer_episode_restarts_the_session():
    """In Docker the agent's programs share one process space with the session's (bus, window manager,
    accessibility), so a reset after an episode in which the agent could run programs restarts the session.
    Not only a terminal runs programs: any app that hands a file to another can start one that does. Here the
    image viewer's Edit > Open with opens Geany (whose commands run programs). Played on a local desktop
    whose sandbox shares processes as Docker's does ("none")."""
    from blindact.actions import Click, Key, TypeText
    from blindact.agents.scripted import locate
    from blindact.desktop.session import DesktopSession
    from blindact.tasks import Target, get_task

    def windows_of(desktop, app_class: str) -> list[int]:
        return [w["id"] for w in desktop.controller.windows() if w["class"].lower() == app_class]

    def click(desktop, **target) -> None:
        deadline = time.monotonic() + 10
        while True:
            desktop.settle()
            try:
                x, y = locate(Target(**target), desktop.accessibility_tree())
                break
            except LookupError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.3)
        desktop.execute(Click(x=x, y=y))

    setup = get_task("contextual-runner-photo-post").setup  # the image viewer and the browser
    with DesktopSession(sandbox="none") as desktop:
        assert desktop.sandbox.shares_processes
        desktop.reset(setup)
        desktop._bring_to_front(windows_of(desktop, "ristretto")[0], "the image viewer")
        click(desktop, role="menu", name="Edit")
        click(desktop, role="menu", name="Open with")
        click(desktop, role="menu item", name_contains="Other Application")
        time.sleep(1.0)  # the "Edit with" dialog's list (Geany, Sakura, Vim, Python...) has the focus: type to find
        desktop.execute(TypeText(text="Geany"))
        desktop.execute(Key(keys=["Return"]))  # closes the search box on the row found
        if not windows_of(desktop, "geany"):
            click(desktop, role="push button", name="OK")
        deadline = time.monotonic() + 15
        while not windows_of(desktop, "geany") and time.monotonic() < deadline:
            time.sleep(0.3)
        assert windows_of(desktop, "geany"), "the image viewer did not open Geany"
        desktop.reset(setup)
        assert any("restarted the session" in line for line in desktop.reset_report), desktop.reset_report
        assert not windows_of(desktop, "geany")


def test_a_desktop_started_after_another_keeps_its_session_across_resets():
    """A desktop started after another closed (in one process: the bench, a run replacing a failed desktop)
    gets its display, hence its uid, while that one's last children may still be unreaped zombies. Those are
    none of the new session's processes: counted as its own, each was "stopped or replaced" at the next reset,
    and every reset restarted the session (the bench measured that, not a reset)."""
    from blindact.desktop.session import DesktopSession
    from blindact.tasks import get_task

    setup = get_task("pilot-ambiguity-cleanup-script").setup
    first = DesktopSession()
    first.start()
    first.reset(setup)
    first.close()
    second = DesktopSession()
    try:
        second.start()
        for _ in range(2):
            second.reset(setup)
            assert not [line for line in second.reset_report if "stopped or replaced" in line], second.reset_report
        assert second.restarts == 0
    finally:
        second.close()

def test_no_orphans_when_the_owner_is_killed(tmp_path):
    # a process that owns a desktop dies by SIGKILL (no cleanup code runs): the kernel must take
    # Xvfb, Chromium and the rest with it
    script = textwrap.dedent("""
        import json, sys
        from blindact.desktop.session import DesktopSession
        s = DesktopSession()
        s.start()
        s.reset([{"launch": {"app": "browser", "url": "about:blank"}}, {"launch": {"app": "terminal"}}])
        pids = [p.popen.pid for p in [*s._core.values(), *s._apps.values(), *(h for b in (s._browser, s._spare) if b for h in b.helpers)]]
        print(json.dumps({"pids": pids, "root": str(s.layout.root)}), flush=True)
        sys.stdin.read()
    """)
    owner = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    info = json.loads(owner.stdout.readline())
    assert all(_alive(pid) for pid in info["pids"])
    chromium_before = _pids_with(info["root"])
    assert chromium_before, "expected processes running under the desktop's folder"
    os.kill(owner.pid, signal.SIGKILL)
    owner.wait(5)
    deadline = time.monotonic() + 10
    while (any(_alive(p) for p in info["pids"]) or _pids_with(info["root"])) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not [p for p in info["pids"] if _alive(p)], "desktop processes survived their owner"
    assert not _pids_with(info["root"]), "sandboxed processes survived their owner"
    subprocess.run(["rm", "-rf", info["root"]], check=False)



def test_a_desktop_started_from_a_thread_that_ends_keeps_its_processes(tmp_path):
    """The parent-death signal follows the forking thread: a harness that starts and resets its desktop from
    a short-lived worker thread (an inspect_ai sample, a thread pool) must not see Xvfb, the web apps or the
    browser SIGKILLed when that thread ends."""
    from blindact.desktop.session import DesktopSession

    session = DesktopSession()
    failures: list[BaseException] = []

    def start() -> None:
        try:
            session.start()
            session.reset([{"launch": {"app": "browser", "url": "about:blank"}}])
        except BaseException as exc:  # noqa: BLE001 - reported below
            failures.append(exc)

    worker = threading.Thread(target=start)
    worker.start()
    worker.join(120)
    try:
        assert not failures, failures
        assert not worker.is_alive()
        pids = [p.popen.pid for p in [*session._core.values(), *session._apps.values()]]
        time.sleep(1.0)  # the kernel's SIGKILL would have landed by now
        assert pids and all(_alive(pid) for pid in pids), "the thread's end killed the desktop's processes"
        assert session.health() and all(session.health().values()), session.health()
        session.screenshot()  # the X server is still there
    finally:
        session.close()

def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _pids_with(root: str) -> list[int]:
    """Processes running in (cwd) or naming (command line) the desktop's folder."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cwd = os.readlink(f"/proc/{entry}/cwd")
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read().decode(errors="replace")
        except OSError:
            continue
        if (cwd.startswith(root) or root in cmdline) and _alive(int(entry)):
            found.append(int(entry))
    return found


def test_descendants_follow_the_tree_and_nothing_else():
    from blindact.desktop.sandbox import descendants

    agent, root = 10000, 0
    table = {
        1: (0, root, "init"),
        10: (1, agent, "dbus-daemon"),
        11: (10, agent, "dconf-service"),   # a service the bus started: under it, so found
        20: (1, agent, "chromium"),
        21: (20, agent, "chromium"),
        30: (1, agent, "sleep"),            # setsid'd and reparented: not under 10 or 20
        40: (1, root, "python3"),
        50: (99, agent, "orphan"),          # its parent already gone from the table
    }
    assert descendants(table, {10, 20}) == {10, 11, 20, 21}
    assert descendants(table, {99}) == set()  # a root that is not in the table has no known children
    assert descendants(table, {1}) == {1, 10, 11, 20, 21, 30, 40}


def test_a_reset_keeps_only_the_sessions_own_processes_not_what_the_bus_started(tmp_path):
    """A sweep with an exact keep set kills a child of a kept process (what a bus started for the agent),
    which the old rule (spare every descendant of a kept process) let survive every reset."""
    import subprocess
    import time

    from blindact.desktop.sandbox import Sandbox, SandboxLayout

    sandbox = Sandbox(SandboxLayout(tmp_path / "desk"), display=0)
    parent = sandbox.spawn("kept", ["bash", "-c", "sleep 300 & exec sleep 301"])  # outlives its child
    try:
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            children = subprocess.run(["pgrep", "-P", str(parent.popen.pid)], capture_output=True, text=True).stdout.split()
            if children:
                break
            time.sleep(0.05)
        assert children, "the kept process's child did not start"
        killed = sandbox.sweep({parent.popen.pid})
        assert [k for k in killed if "sleep" in k], killed
        assert parent.alive  # what was kept is kept
    finally:
        parent.stop()


def test_the_process_table_reads_this_process():
    import os

    from blindact.desktop.sandbox import processes

    me = processes()[os.getpid()]
    assert me[0] == os.getppid() and me[1] == os.getuid() and me[2].startswith("python")


def test_a_killed_runs_desktop_folder_is_swept_by_the_next(tmp_path):
    """A run killed with SIGKILL leaves its desktop's folder (the agent's home, seeded secrets) behind; the
    next desktop to start removes every such folder whose owner is gone, and leaves live ones alone."""
    import subprocess

    from blindact.desktop.stale import DESKTOP_PREFIX, OWNER_FILE, owner_mark, sweep_stale_desktops

    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = tmp_path / f"{DESKTOP_PREFIX}dead"
    (stale / "home").mkdir(parents=True)
    (stale / "home" / "secret.txt").write_text("seeded secret")
    (stale / OWNER_FILE).write_text(owner_mark(dead.pid))
    live = tmp_path / f"{DESKTOP_PREFIX}live"
    live.mkdir()
    (live / OWNER_FILE).write_text(owner_mark())
    unmarked = tmp_path / f"{DESKTOP_PREFIX}unmarked"  # not ours to judge: left alone
    unmarked.mkdir()
    assert sweep_stale_desktops(tmp_path, force=True) == [stale]
    assert not stale.exists() and live.exists() and unmarked.exists()


def test_the_agents_programs_reach_the_web_apps_at_their_socket_after_every_reset(desktop):
    # `curl --unix-socket $XDG_RUNTIME_DIR/apps.sock` is how the agent's terminal reaches the web apps (the
    # tasks' terminal routes post that way); the real socket is in ctl/, out of the agent's reach
    curl = ("curl -s -o /dev/null -w 'code=%{http_code}\\n' --unix-socket \"$XDG_RUNTIME_DIR/apps.sock\" "
            "http://mail.localhost/; ls \"$XDG_RUNTIME_DIR\"/../ctl 2>&1 | head -1")
    for episode in range(2):
        desktop.reset([{"seed": {"mail": {}}}])
        out = _sandbox_bash(desktop, curl)
        assert "code=200" in out, (episode, out)
        assert "Permission denied" in out or "No such file" in out, out
    # the agent deletes its socket: the next reset sees it and opens it afresh
    _sandbox_bash(desktop, 'rm -f "$XDG_RUNTIME_DIR/apps.sock"')
    desktop.reset([{"seed": {"mail": {}}}])
    assert "code=200" in _sandbox_bash(desktop, curl)
