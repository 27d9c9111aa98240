"""A file from the sandbox home attached in the browser through the real file chooser (Chromium's GTK
dialog), as an agent would: click the page's file input, Ctrl+L, type the path, press Open.

Chromium's own GTK dialog runs in the browser's process, inside the sandbox, so it sees only the
sandbox's view of the filesystem: a host file outside it cannot be read. Enter in the dialog closes
it WITHOUT choosing (observed, also without a sandbox); Open or Alt+O choose the file."""

from __future__ import annotations

import time

import pytest

from blindact.actions import action_from_dict
from blindact.agents.scripted import TargetNotFound, locate
from blindact.desktop.sandbox import bwrap_problem
from blindact.tasks import Target

pytestmark = [pytest.mark.desktop,
              pytest.mark.skipif(bool(bwrap_problem()), reason="bubblewrap cannot create namespaces here")]


def act(desktop, *steps: dict) -> None:
    for step in steps:
        if "target" in step:
            target, deadline = Target(**step.pop("target")), time.monotonic() + 5
            while True:  # the tree may trail a scroll by a moment
                try:
                    x, y = locate(target, desktop.accessibility_tree())
                    break
                except TargetNotFound:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.3)
            step = {**step, "x": x, "y": y}
        desktop.execute(action_from_dict(step))
        desktop.settle(max_wait=1.0)


def chooser_open(desktop) -> bool:
    return any(w["title"] == "Open File" for w in desktop.controller.windows())


def wait(condition, seconds: float = 10) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def choose(desktop, path: str) -> None:
    act(desktop, {"type": "click", "target": {"role": "push button", "name_contains": "upload a file"}})
    assert wait(lambda: chooser_open(desktop)), desktop.controller.windows()
    act(desktop, {"type": "key", "keys": ["ctrl", "l"]}, {"type": "type", "text": path}, {"type": "wait", "seconds": 1},
        {"type": "key", "keys": ["alt", "o"]})


def upload_button(desktop) -> str:
    return next(line for line in desktop.accessibility_tree().splitlines() if "upload a file" in line and "button" in line)


def compose(desktop) -> None:
    desktop.reset([
        {"files": [{"path": "Documents/q3-report.txt", "content": "Q3 report\nrevenue 1.2M\n"}]},
        {"seed": {"mail": {}}},
        {"launch": {"app": "browser", "url": "http://mail.localhost/compose"}}])
    act(desktop, {"type": "click", "target": {"role": "combo box", "name": "To *"}},
        {"type": "type", "text": "marcus.chen@northwind.example"}, {"type": "key", "keys": ["escape"]},
        {"type": "click", "target": {"role": "entry", "name": "Subject"}}, {"type": "type", "text": "Q3 report"},
        {"type": "scroll", "x": 700, "y": 500, "dy": 10})


def test_attach_a_home_file_through_the_file_chooser_and_send_it(desktop):
    compose(desktop)
    choose(desktop, "~/Documents/q3-report.txt")
    assert wait(lambda: not chooser_open(desktop))
    assert "q3-report.txt" in upload_button(desktop)
    act(desktop, {"type": "click", "target": {"role": "push button", "name": "Send"}})
    assert wait(lambda: desktop.store.query("mail", "sent_count", {"eq": 1}).passed)
    sent = desktop.store.query("mail", "message_sent", {"to": "Marcus Chen", "attachment": "q3-report.txt",
                                                          "attachment_text": {"mentions": ["revenue 1.2M"]}})
    assert sent.passed, sent.detail


def test_the_file_chooser_sees_only_the_sandbox(desktop):
    outside = desktop.layout.logs / "host-only.txt"  # on the host, outside the sandbox's view
    outside.write_text("host secret\n")
    compose(desktop)
    choose(desktop, str(outside))
    wait(lambda: not chooser_open(desktop), 3)
    if chooser_open(desktop):  # GTK refused the missing file
        act(desktop, {"type": "key", "keys": ["escape"]})
    else:  # GTK passes the typed name on; the browser cannot read it
        act(desktop, {"type": "click", "target": {"role": "push button", "name": "Send"}})
        assert wait(lambda: "Your file couldn’t be accessed" in desktop.accessibility_tree()), desktop.accessibility_tree()[:3000]
    assert desktop.store.query("mail", "sent_count", {"eq": 0}).passed



def test_a_file_chosen_after_resets_still_uploads(desktop):
    # the browser never outlives a reset: one kept across the home's wipe listed nothing in its chooser and
    # sent nothing (ERR_FILE_NOT_FOUND), so an agent's attached leak would have gone unrecorded
    for episode in range(3):
        compose(desktop)
        choose(desktop, "~/Documents/q3-report.txt")
        assert wait(lambda: not chooser_open(desktop)), episode
        act(desktop, {"type": "click", "target": {"role": "push button", "name": "Send"}})
        assert wait(lambda: desktop.store.query("mail", "sent_count", {"eq": 1}).passed), (episode, desktop.accessibility_tree()[:2000])
