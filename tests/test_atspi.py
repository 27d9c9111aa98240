"""Tests for blindact.desktop.atspi against a real Xvfb + AT-SPI + Chromium desktop.

The fixture starts its own desktop by hand (Xvfb, a session dbus-daemon, at-spi-bus-launcher,
Chromium on a local page whose elements sit at known CSS pixel positions) and kills every process
it started, including their descendants, even when a test fails.
"""

from __future__ import annotations

import os
import shutil
import signal
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from blindact.desktop.atspi import (
    A11yError,
    A11yBusNotFound,
    A11yNode,
    AccessibilityReader,
    find_a11y_bus,
    find_nodes,
    parse_serialized,
    serialize,
)

pytestmark = pytest.mark.desktop

SCREEN_W, SCREEN_H = 1280, 720

# Every control sits at a fixed CSS position so the test can predict its screen box from the
# position of the web document node alone (device scale factor is 1 under Xvfb).
ELEMENTS = {
    "post": dict(left=40, top=30, width=140, height=32),
    "cancel": dict(left=220, top=30, width=100, height=32),
    "name": dict(left=40, top=100, width=240, height=28),
    "agree": dict(left=40, top=160, width=20, height=20),
    "docs": dict(left=40, top=210, width=160, height=24),
    "disabled": dict(left=360, top=30, width=120, height=32),
    "notes": dict(left=360, top=100, width=300, height=80),
}

PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>AT-SPI test page</title>
<style>
  html, body {{ margin: 0; padding: 0; }}
  .abs {{ position: absolute; box-sizing: border-box; margin: 0; }}
</style></head>
<body>
<button id="post" class="abs" style="{post}">Post comment</button>
<button id="cancel" class="abs" style="{cancel}">Cancel</button>
<input id="name" class="abs" style="{name}" type="text" aria-label="Your name" value="Alice">
<input id="agree" class="abs" style="{agree}" type="checkbox" aria-label="I agree to the terms">
<a id="docs" class="abs" style="{docs}" href="#docs">Read the docs</a>
<button id="disabled" class="abs" style="{disabled}" disabled>Locked</button>
<textarea id="notes" class="abs" style="{notes}" aria-label="Notes" readonly>Read-only notes</textarea>
<div style="display:none"><button>Invisible button</button></div>
<div class="abs" style="left:0; top:4000px;"><button>Far below</button></div>
{filler}
</body></html>
"""

# Below and beside the controls: the bulk of a typical web app (a link sidebar and a grid of
# cards with headings, text and buttons), so snapshots have a realistic few hundred nodes.
FILLER_SIDEBAR = "".join(
    f'<li><a href="#topic{i}">Topic number {i}</a></li>' for i in range(20)
)
FILLER_CARDS = "".join(
    f'<div class="card"><h3><a href="#post{i}">Post {i}</a></h3>'
    f"<p>Body of post {i} by <b>user{i}</b>.</p>"
    f'<button>Like {i}</button><button>Reply {i}</button></div>'
    for i in range(30)
)
FILLER = f"""
<style>
  #sidebar {{ position: absolute; left: 700px; top: 0; width: 200px; margin: 0; font: 12px sans-serif; }}
  #sidebar li {{ height: 26px; }}
  #cards {{ position: absolute; left: 0; top: 260px; width: 690px; font: 11px sans-serif; }}
  .card {{ display: inline-block; width: 128px; height: 60px; margin: 2px; overflow: hidden; }}
  .card h3, .card p {{ margin: 0; font-size: 11px; }}
  .card button {{ font-size: 10px; padding: 0 2px; }}
</style>
<nav aria-label="Topics"><ul id="sidebar">{FILLER_SIDEBAR}</ul></nav>
<main id="cards" aria-label="Posts">{FILLER_CARDS}</main>
"""


def _style(box: dict) -> str:
    return "; ".join(f"{k}: {v}px" for k, v in box.items())


def _descendants(roots: list[int]) -> list[int]:
    """All live processes under `roots` (inclusive), found through /proc parent links."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                stat = fh.read()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    found, stack = [], list(roots)
    while stack:
        pid = stack.pop()
        found.append(pid)
        stack.extend(children.get(pid, []))
    return found


class Desktop:
    """One throw-away desktop: Xvfb, session bus, AT-SPI bus launcher, Chromium."""

    def __init__(self) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix="blindact-atspi-"))
        self.procs: list[subprocess.Popen] = []
        self.display = ""
        self.session_bus = ""
        self.page = self.tmp / "page.html"
        self.chrome: subprocess.Popen | None = None

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> None:
        runtime = self.tmp / "run"
        runtime.mkdir(mode=0o700)
        self.page.write_text(
            PAGE.format(filler=FILLER, **{k: _style(v) for k, v in ELEMENTS.items()})
        )

        # -displayfd makes Xvfb pick a free display itself, so parallel runs cannot collide.
        # -noreset: without it the server resets when its last client leaves, which happens
        # right after at-spi-bus-launcher writes AT_SPI_BUS, and the reset erases the property.
        rfd, wfd = os.pipe()
        xvfb = self._spawn(
            ["Xvfb", "-displayfd", str(wfd), "-screen", "0", f"{SCREEN_W}x{SCREEN_H}x24",
             "-nolisten", "tcp", "-noreset"],
            pass_fds=(wfd,),
        )
        os.close(wfd)
        with os.fdopen(rfd) as fh:
            number = fh.readline().strip()
        if not number.isdigit():
            raise RuntimeError(f"Xvfb did not report a display number (exit {xvfb.poll()})")
        self.display = f":{number}"

        bus_path = self.tmp / "bus"
        dbus = self._spawn(
            ["dbus-daemon", "--session", "--nofork", f"--address=unix:path={bus_path}",
             "--print-address"],
            stdout=subprocess.PIPE,
        )
        assert dbus.stdout is not None
        self.session_bus = dbus.stdout.readline().decode().strip()
        if not self.session_bus:
            raise RuntimeError("session dbus-daemon did not print its address")

        env = self.env()
        self._spawn(["/usr/libexec/at-spi-bus-launcher", "--launch-immediately"], env=env)
        deadline = time.monotonic() + 10
        while True:
            try:
                find_a11y_bus(self.display, self.session_bus)
                break
            except A11yBusNotFound:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

        self.chrome = self._spawn(
            ["chromium", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--force-renderer-accessibility", f"--user-data-dir={self.tmp / 'chrome'}",
             "--window-position=0,0", f"--window-size={SCREEN_W},{SCREEN_H}",
             "--disable-features=Translate", "--password-store=basic",
             f"file://{self.page}"],
            env={**env, "ACCESSIBILITY_ENABLED": "1"},
        )

    def env(self) -> dict[str, str]:
        return {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.tmp),
            "DISPLAY": self.display,
            "DBUS_SESSION_BUS_ADDRESS": self.session_bus,
            "XDG_RUNTIME_DIR": str(self.tmp / "run"),
            "XDG_CONFIG_HOME": str(self.tmp / "config"),
            "XDG_CACHE_HOME": str(self.tmp / "cache"),
            "GSETTINGS_BACKEND": "memory",
            "NO_AT_BRIDGE": "0",
        }

    def _spawn(self, argv: list[str], **kw) -> subprocess.Popen:
        kw.setdefault("stdout", subprocess.DEVNULL)
        kw.setdefault("stderr", subprocess.DEVNULL)
        proc = subprocess.Popen(argv, start_new_session=True, **kw)
        self.procs.append(proc)
        return proc

    def stop(self) -> None:
        pids = _descendants([p.pid for p in self.procs if p.poll() is None])
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for pid in pids:
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
            deadline = time.monotonic() + 3
            for proc in self.procs:
                try:
                    proc.wait(timeout=max(0.0, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    pass
            pids = [p for p in pids if _alive(p)]
            if not pids:
                break
        for proc in self.procs:
            if proc.stdout:
                proc.stdout.close()
        shutil.rmtree(self.tmp, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


# ------------------------------------------------------------------------------------------------
# Fixtures
# ------------------------------------------------------------------------------------------------


def _wait_for(reader: AccessibilityReader, predicate, timeout: float = 20.0) -> list[A11yNode]:
    deadline = time.monotonic() + timeout
    nodes: list[A11yNode] = []
    while time.monotonic() < deadline:
        nodes = reader.snapshot()
        if predicate(nodes):
            return nodes
        time.sleep(0.2)
    raise AssertionError(
        f"condition not met within {timeout}s; last snapshot:\n{serialize(nodes)}\n"
        f"notes: {reader.last_notes}"
    )


def _page_loaded(nodes: list[A11yNode]) -> bool:
    return bool(find_nodes(nodes, role="push button", name="Reply 9"))


@pytest.fixture(scope="module")
def desktop():
    for tool in ("Xvfb", "dbus-daemon", "chromium"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed")
    if not os.path.exists("/usr/libexec/at-spi-bus-launcher"):
        pytest.skip("at-spi-bus-launcher is not installed")
    desk = Desktop()
    try:
        desk.start()
        yield desk
    finally:
        desk.stop()


@pytest.fixture(scope="module")
def reader(desktop):
    rd = AccessibilityReader(find_a11y_bus(desktop.display, desktop.session_bus))
    try:
        _wait_for(rd, _page_loaded, timeout=30)
        yield rd
    finally:
        rd.close()


def _document(nodes: list[A11yNode]) -> A11yNode:
    docs = [n for n in find_nodes(nodes, role="document web") if n.name == "AT-SPI test page"]
    assert len(docs) == 1, serialize(nodes)
    return docs[0]


def _click(display: str, x: int, y: int) -> None:
    from Xlib import X
    from Xlib import display as xdisplay
    from Xlib.ext import xtest

    disp = xdisplay.Display(display)
    try:
        disp.screen().root.warp_pointer(x, y)
        disp.sync()
        xtest.fake_input(disp, X.ButtonPress, 1)
        xtest.fake_input(disp, X.ButtonRelease, 1)
        disp.sync()
    finally:
        disp.close()


# ------------------------------------------------------------------------------------------------
# Finding the bus
# ------------------------------------------------------------------------------------------------


def test_find_bus_from_root_window_property(desktop):
    address = find_a11y_bus(desktop.display)
    assert address.startswith("unix:")
    assert str(desktop.tmp / "run") in address  # the launcher's XDG_RUNTIME_DIR


def test_find_bus_falls_back_to_session_bus(desktop):
    # A display with no AT_SPI_BUS property (a fresh Xvfb) forces the org.a11y.Bus fallback.
    rfd, wfd = os.pipe()
    xvfb = subprocess.Popen(
        ["Xvfb", "-displayfd", str(wfd), "-screen", "0", "320x200x24", "-nolisten", "tcp"],
        pass_fds=(wfd,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    os.close(wfd)
    try:
        with os.fdopen(rfd) as fh:
            other = ":" + fh.readline().strip()
        address = find_a11y_bus(other, desktop.session_bus)
        assert address == find_a11y_bus(desktop.display)
        with pytest.raises(A11yBusNotFound) as info:
            find_a11y_bus(other)
        assert other in str(info.value) and "AT_SPI_BUS" in str(info.value)
    finally:
        xvfb.kill()
        xvfb.wait(timeout=5)


def test_missing_bus_gives_clear_error(tmp_path):
    with pytest.raises(A11yBusNotFound) as info:
        find_a11y_bus(":4242", session_bus=f"unix:path={tmp_path}/no-bus")
    message = str(info.value)
    assert ":4242" in message
    assert "AT_SPI_BUS" in message and "org.a11y.Bus.GetAddress" in message
    assert f"{tmp_path}/no-bus" in message

    with pytest.raises(A11yError) as info2:
        AccessibilityReader(f"unix:path={tmp_path}/no-a11y-bus")
    assert f"{tmp_path}/no-a11y-bus" in str(info2.value)


# ------------------------------------------------------------------------------------------------
# Snapshot contents
# ------------------------------------------------------------------------------------------------


def _one(nodes: list[A11yNode], role: str, name: str) -> A11yNode:
    found = find_nodes(nodes, role=role, name=name)
    assert len(found) == 1, f"expected one {role} {name!r}, got {found}\n{serialize(nodes)}"
    return found[0]


def test_controls_have_roles_names_and_states(reader):
    nodes = reader.snapshot()
    post = _one(nodes, "push button", "Post comment")
    assert "focusable" in post.states and "enabled" in post.states
    assert "disabled" not in post.states
    assert post.app.lower() == "chromium"

    locked = _one(nodes, "push button", "Locked")
    assert "disabled" in locked.states and "focusable" not in locked.states

    name = _one(nodes, "entry", "Your name")
    assert name.text == "Alice"
    assert "editable" in name.states and "focusable" in name.states

    notes = _one(nodes, "entry", "Notes")
    assert "read-only" in notes.states and "editable" not in notes.states
    assert "disabled" not in notes.states  # read-only is not disabled
    assert notes.text == "Read-only notes"

    agree = _one(nodes, "check box", "I agree to the terms")
    assert "checked" not in agree.states

    link = _one(nodes, "link", "Read the docs")
    assert "focusable" in link.states

    # Not rendered / scrolled far out of view: not in the snapshot.
    assert not find_nodes(nodes, name="Invisible button")
    assert not find_nodes(nodes, name="Far below")

    # Ids are depth-first indices, parents come before children, depth follows the parents.
    for i, node in enumerate(nodes):
        assert node.id == i
        if node.parent is not None:
            assert node.parent < node.id
            assert nodes[node.parent].depth == node.depth - 1
            assert node.id in nodes[node.parent].children
    assert reader.last_notes == [] or all("x " in n for n in reader.last_notes)


def test_bboxes_match_css_layout(reader):
    nodes = reader.snapshot()
    doc = _document(nodes)
    assert doc.bbox is not None
    dx, dy, dw, dh = doc.bbox
    # The page viewport lies inside the 1280x720 screen, below the browser's toolbars.
    assert 0 <= dx and 0 < dy and dx + dw <= SCREEN_W and dy + dh <= SCREEN_H
    expected = {
        ("push button", "Post comment"): ELEMENTS["post"],
        ("push button", "Cancel"): ELEMENTS["cancel"],
        ("entry", "Your name"): ELEMENTS["name"],
        ("check box", "I agree to the terms"): ELEMENTS["agree"],
        ("push button", "Locked"): ELEMENTS["disabled"],
        ("entry", "Notes"): ELEMENTS["notes"],
    }
    for (role, name), box in expected.items():
        node = _one(nodes, role, name)
        assert node.bbox is not None, node
        x, y, w, h = node.bbox
        assert abs(x - (dx + box["left"])) <= 1, (node, box, doc.bbox)
        assert abs(y - (dy + box["top"])) <= 1, (node, box, doc.bbox)
        assert abs(w - box["width"]) <= 1 and abs(h - box["height"]) <= 1, (node, box)
        assert 0 <= x and x + w <= SCREEN_W and 0 <= y and y + h <= SCREEN_H
    # A link is inline: its height is the line's, its left edge the CSS left.
    link = _one(nodes, "link", "Read the docs")
    assert link.bbox is not None
    assert abs(link.bbox[0] - (dx + ELEMENTS["docs"]["left"])) <= 1
    assert dy + ELEMENTS["docs"]["top"] - 1 <= link.bbox[1] <= dy + ELEMENTS["docs"]["top"] + 8


def test_checked_state_follows_a_real_click(desktop, reader):
    nodes = reader.snapshot()
    box = _one(nodes, "check box", "I agree to the terms")
    assert "checked" not in box.states
    assert box.center is not None
    # Clicking at the reported centre proves the box is where the user sees the control.
    _click(desktop.display, *box.center)
    nodes = _wait_for(
        reader,
        lambda ns: "checked" in _one(ns, "check box", "I agree to the terms").states,
        timeout=10,
    )
    assert "focused" in _one(nodes, "check box", "I agree to the terms").states
    _click(desktop.display, *box.center)
    _wait_for(
        reader,
        lambda ns: "checked" not in _one(ns, "check box", "I agree to the terms").states,
        timeout=10,
    )


# ------------------------------------------------------------------------------------------------
# Text form
# ------------------------------------------------------------------------------------------------


def test_serialize_round_trip(reader):
    nodes = reader.snapshot()
    text = serialize(nodes)
    lines = text.splitlines()
    parsed = parse_serialized(text)
    assert len(parsed) == len(lines)
    by_id = {n.id: n for n in nodes}
    for item in parsed:
        node = by_id[item["id"]]
        assert item["role"] == node.role
        assert item["name"] == node.name
        assert item["bbox"] == node.bbox
        assert item["center"] == node.center
        assert set(item["states"]) <= set(node.states)
    # Every interactive node survives wrapper pruning.
    kept = {item["id"] for item in parsed}
    for node in nodes:
        if node.interactive:
            assert node.id in kept, node

    post = _one(nodes, "push button", "Post comment")
    line = next(ln for ln in lines if ln.strip().startswith(f"[{post.id}] "))
    x, y, w, h = post.bbox
    assert line.strip() == f'[{post.id}] push button "Post comment" (focusable) @{x},{y} {w}x{h}'
    entry = next(i for i in parsed if i["name"] == "Your name")
    assert entry["value"] == "Alice" and "editable" in entry["states"]
    locked = next(i for i in parsed if i["name"] == "Locked")
    assert "disabled" in locked["states"]


def test_serialize_skips_wrappers_and_escapes():
    def node(i, role, name="", parent=None, depth=0, bbox=(0, 0, 10, 10), states=(), text=None):
        return A11yNode(id=i, role=role, name=name, states=tuple(states), bbox=bbox,
                        depth=depth, app="app", text=text, parent=parent)

    nodes = [
        node(0, "application", "app", bbox=None),
        node(1, "section", parent=0, depth=1),
        node(2, "push button", 'Say "hi"\nnow', parent=1, depth=2, states=("focusable",)),
        node(3, "panel", parent=0, depth=1),
        node(4, "label", "a", parent=3, depth=2),
        node(5, "label", "b", parent=3, depth=2),
        node(6, "section", parent=0, depth=1),
        node(7, "paragraph", parent=0, depth=1),
        node(8, "static", "Body by ", parent=7, depth=2),
        node(9, "static", "user0", parent=7, depth=2),
        node(10, "static", ".", parent=7, depth=2),
        node(11, "list item", parent=0, depth=1),
        node(12, "static", "\u2022 ", parent=11, depth=2),
        node(13, "link", "Topic", parent=11, depth=2, states=("focusable",)),
    ]
    for n in nodes[1:]:
        nodes[n.parent].children.append(n.id)
    text = serialize(nodes)
    assert text.splitlines() == [
        '[0] application "app"',
        '  [2] push button "Say \\"hi\\"\\nnow" (focusable) @0,0 10x10',
        "  [3] panel @0,0 10x10",
        '    [4] label "a" @0,0 10x10',
        '    [5] label "b" @0,0 10x10',
        '  [7] paragraph value="Body by user0." @0,0 10x10',
        "  [11] list item @0,0 10x10",
        '    [13] link "Topic" (focusable) @0,0 10x10',
    ]
    parsed = parse_serialized(text)
    assert parsed[1]["name"] == 'Say "hi"\nnow'
    assert parsed[1]["depth"] == 1 and parsed[1]["center"] == (5, 5)
    assert parsed[0]["bbox"] is None and parsed[0]["center"] is None
    with pytest.raises(ValueError):
        parse_serialized("not a node line")


def test_find_nodes(reader):
    nodes = reader.snapshot()
    assert [n.name for n in find_nodes(nodes, role="push button", name="Cancel")] == ["Cancel"]
    names = {n.name for n in find_nodes(nodes, name_contains="TOPIC NUMBER 1")}
    assert "Topic number 1" in names and "Topic number 19" in names
    assert all(n.role == "link" for n in find_nodes(nodes, role="link"))
    assert find_nodes(nodes, role="push button", name_contains="nope") == []


# ------------------------------------------------------------------------------------------------
# Robustness and speed
# ------------------------------------------------------------------------------------------------


def test_peer_to_peer_and_bus_routes_agree(desktop, reader):
    via_bus = AccessibilityReader(reader.bus_address, peer_to_peer=False)
    try:
        a = [(n.role, n.name, n.bbox) for n in reader.snapshot()]
        b = [(n.role, n.name, n.bbox) for n in via_bus.snapshot()]
        assert reader.last_stats["direct"] == 1
        assert via_bus.last_stats["direct"] == 0
        assert a == b
    finally:
        via_bus.close()


def test_hung_application_is_skipped_within_timeout(desktop, reader):
    assert desktop.chrome is not None
    fast = AccessibilityReader(reader.bus_address, timeout=1.0)
    try:
        _wait_for(fast, _page_loaded)
        os.kill(desktop.chrome.pid, signal.SIGSTOP)
        try:
            started = time.monotonic()
            nodes = fast.snapshot()
            elapsed = time.monotonic() - started
        finally:
            os.kill(desktop.chrome.pid, signal.SIGCONT)
        assert elapsed < 2.5, elapsed
        assert not find_nodes(nodes, role="push button", name="Post comment")
        assert any("did not answer" in note for note in fast.last_notes), fast.last_notes
        # Once the app answers again, the same reader sees it again.
        _wait_for(fast, _page_loaded, timeout=10)
    finally:
        fast.close()


def test_snapshot_speed(reader):
    times, sizes = [], []
    for _ in range(20):
        started = time.perf_counter()
        nodes = reader.snapshot()
        times.append((time.perf_counter() - started) * 1000)
        sizes.append(len(nodes))
    print(
        f"\nAT-SPI snapshot over 20 runs: median {statistics.median(times):.1f} ms, "
        f"min {min(times):.1f} ms, max {max(times):.1f} ms; {sizes[-1]} nodes kept, "
        f"{reader.last_stats['visited']} visited, {reader.last_stats['requests']} calls"
    )
    assert min(sizes) == max(sizes)


def test_snapshot_of_named_apps_only(reader):
    full = [(n.role, n.name, n.bbox) for n in reader.snapshot()]
    only = [(n.role, n.name, n.bbox) for n in reader.snapshot(apps={"CHROMIUM"})]
    assert only == full and reader.last_stats["apps_skipped"] == 0
    others = reader.snapshot(apps={"geany"})
    assert not find_nodes(others, role="push button", name="Post comment")
    assert [n.role for n in others] == ["application"] * len(others), others  # the bare app nodes
    assert reader.last_stats["apps_skipped"] == reader.last_stats["apps"] >= 1
