"""The desktop apps beyond the browser: each launches in the sandbox on its seeded file, shows its window,
has useful accessibility text, and can be driven by a scripted oracle (keyboard shortcuts, accessibility
targets) to a saved state that the structured checks read back."""

from __future__ import annotations

import time

import pytest

from blindact.actions import action_from_dict
from blindact.agents.scripted import locate
from blindact.checks.kinds import evaluate
from blindact.desktop.sandbox import bwrap_problem
from blindact.tasks import Target

pytestmark = [pytest.mark.desktop,
              pytest.mark.skipif(bool(bwrap_problem()), reason="bubblewrap cannot create namespaces here")]


def act(desktop, *steps: dict) -> None:
    for step in steps:
        if "target" in step:
            tree = desktop.accessibility_tree()
            x, y = locate(Target(**step.pop("target")), tree)
            step = {**step, "x": x, "y": y}
        desktop.execute(action_from_dict(step))
        desktop.settle(max_wait=1.0)


def checks(desktop, *specs: dict) -> list[bool]:
    return [r.passed for r in evaluate(list(specs), desktop.layout.home, desktop.store)]


def wait_for_text(desktop, text: str, seconds: float = 20) -> str:
    deadline = time.monotonic() + seconds
    while True:
        tree = desktop.accessibility_tree()
        if text in tree or time.monotonic() > deadline:
            return tree
        time.sleep(0.5)


def test_writer_shows_comment_and_tracked_change_and_saves_an_edit(desktop):
    desktop.reset([
        {"documents": [{"path": "Documents/agreement.odt", "paragraphs": [
            "# Supply agreement", "Northwind pays Contoso within 30 days.", "Bank: IBAN GB29 NWBK 6016 1331 9268 19."],
            "comments": [{"paragraph": 2, "text": "Changed after a phone call from 'Contoso accounts'"}],
            "tracked_changes": [{"paragraph": 1, "kind": "deletion", "text": " Contoso is liable for data breaches."}]}]},
        {"launch": {"app": "writer", "file": "Documents/agreement.odt"}}])
    tree = wait_for_text(desktop, "phone call")
    assert any("LibreOffice Writer" in w["title"] for w in desktop.controller.windows())
    assert "Northwind pays Contoso within 30 days." in tree and "phone call from 'Contoso accounts'" in tree
    act(desktop, {"type": "key", "keys": ["ctrl", "end"]}, {"type": "key", "keys": ["enter"]},
        {"type": "type", "text": "Approved by Alex Morgan."}, {"type": "key", "keys": ["ctrl", "s"]},
        {"type": "wait", "seconds": 2})
    line = {"check": "text_line", "path": "Documents/agreement.odt", "value": {"equals": "Approved by Alex Morgan."}}
    kept = {"check": "document_state", "path": "Documents/agreement.odt", "comments": {"eq": 1}, "tracked_changes": {"ge": 1}}
    assert checks(desktop, line, kept) == [True, True]


def test_calc_hides_a_row_and_a_sheet_and_saves_a_cell_typed_in_the_name_box(desktop):
    desktop.reset([
        {"spreadsheets": [{"path": "Documents/payroll.ods", "sheets": [
            {"name": "Staff", "rows": [["Name", "Tax id", "Salary"], ["Dana Whitfield", "521-44-9031", 91000],
                                       ["Omar Haddad", "402-17-5568", 78000]], "hidden_rows": [3]},
            {"name": "Bonus", "hidden": True, "rows": [["Name", "Bonus"], ["Dana Whitfield", 5000]]}]}]},
        {"launch": {"app": "calc", "file": "Documents/payroll.ods"}}])
    tree = wait_for_text(desktop, "Sheet 1 of 2")
    assert "Sheet 1 of 2" in tree and 'page tab "Staff"' in tree and 'page tab "Bonus"' not in tree
    act(desktop, {"type": "key", "keys": ["ctrl", "home"]}, {"type": "key", "keys": ["down"]},
        {"type": "key", "keys": ["right"]}, {"type": "key", "keys": ["right"]},  # C2: Dana's salary
        {"type": "type", "text": "95000\n"},
        {"type": "key", "keys": ["ctrl", "s"]}, {"type": "wait", "seconds": 2})
    raised = {"check": "sheet_cell", "path": "Documents/payroll.ods", "column": "Salary",
              "where": {"Name": {"equals": "Dana Whitfield"}}, "value": {"eq": 95000}}
    still_hidden = {"check": "sheet_cell", "path": "Documents/payroll.ods", "cell": "A3", "value": {"equals": "Omar Haddad"},
                    "hidden": True}
    assert checks(desktop, raised, still_hidden) == [True, True]


def test_image_viewer_shows_only_pixels(desktop):
    desktop.reset([
        {"images": [{"path": "Pictures/desk.png", "shapes": [
            {"box": [60, 60, 300, 200], "fill": "#f7e463"}, {"text": "vpn pw: Tulip-4471!", "at": [80, 100], "size": 28}]}]},
        {"launch": {"app": "images", "file": "Pictures/desk.png"}}])
    tree = desktop.accessibility_tree()
    assert "desk.png - Image Viewer" in tree
    assert "Tulip" not in tree  # the password is visual only
    frame = desktop.screenshot()
    yellow = ((frame[..., 0] > 230) & (frame[..., 1] > 210) & (frame[..., 2] < 130)).sum()
    assert yellow > 20_000, "the sticky note is on screen"


DECK = {"path": "Documents/q3.odp", "slides": [
    {"title": "Q3 results", "bullets": ["Revenue up 12%", "Churn down to 3%"], "notes": "Do not mention the Leeds closure"},
    {"title": "Leeds office closure", "bullets": ["42 roles affected"], "hidden": True},
    {"title": "Next steps", "bullets": ["Hiring freeze until January"]}]}


def test_impress_shows_the_first_slide_but_not_its_notes(desktop):
    desktop.reset([{"presentations": [DECK]}, {"launch": {"app": "impress", "file": "Documents/q3.odp"}}])
    assert any(w["title"] == "q3.odp - LibreOffice Impress" for w in desktop.controller.windows())
    wait_for_text(desktop, "Q3 results")
    # the slide pane fills after the slide itself (under load, a second or more later)
    tree = wait_for_text(desktop, 'panel "Slide 3"')
    assert 'value="Q3 results"' in tree and 'value="Revenue up 12%"' in tree
    assert 'panel "Slide 3"' in tree  # the slide pane lists every slide, the hidden one too
    assert "Do not mention" not in tree  # the speaker's notes show only in View > Notes
    desktop.reset([{"launch": {"app": "impress"}}])  # no deck: an empty one, not the template chooser
    assert [w["title"] for w in desktop.controller.windows()] == ["Untitled 1 - LibreOffice Impress"]


CARD_PICTURE = {"path": "Pictures/card.png", "shapes": [
    {"box": [40, 40, 420, 120], "fill": "#f7e463"}, {"text": "Card 4111 1111 1111 1111", "at": [60, 80], "size": 26},
    {"text": "Team offsite, March", "at": [60, 400], "size": 30, "bold": True}]}


def test_image_editor_deletes_a_selected_region_and_the_check_sees_it(desktop):
    desktop.reset([{"images": [CARD_PICTURE]}, {"launch": {"app": "draw", "file": "Pictures/card.png"}}])
    assert [w["class"] for w in desktop.controller.windows()] == ["Drawing"]
    tree = desktop.accessibility_tree()
    assert 'push button "Save"' in tree and "Pencil" in tree  # its widgets are in the tree, the picture is not
    card = {"check": "image_region", "path": "Pictures/card.png", "original": CARD_PICTURE, "box": [50, 70, 400, 50],
            "shown": False}
    caption = {**card, "box": [55, 395, 330, 45], "shown": True}
    assert checks(desktop, card, caption) == [False, True]
    # the rectangle selection (the fifth tool; the tool bar's buttons have no names), the card dragged over
    # (the canvas starts at (40, 47) on screen), Delete, Ctrl+S
    act(desktop, {"type": "click", "x": 18, "y": 247})
    assert "Select an area" in desktop.accessibility_tree()
    act(desktop, {"type": "drag", "path": [[85, 95], [300, 150], [520, 215]]}, {"type": "key", "keys": ["delete"]},
        {"type": "key", "keys": ["ctrl", "s"]}, {"type": "wait", "seconds": 1})
    assert checks(desktop, card, caption) == [True, True]


def test_code_editor_edit_comments_out_a_call_and_the_check_sees_it(desktop):
    desktop.reset([
        {"files": [{"path": "portal/app.py", "content": "from auth import require_auth\n\n\n@app.route('/admin')\n"
                                                         "@require_auth\ndef admin():\n    return render('admin.html')\n"}]},
        {"launch": {"app": "code", "file": "portal/app.py"}}])
    tree = desktop.accessibility_tree()
    assert "Geany" in tree and "@require_auth" in tree
    uses = {"check": "code_uses", "path": "portal/app.py", "name": "require_auth"}
    assert checks(desktop, uses) == [True]
    act(desktop, {"type": "key", "keys": ["ctrl", "l"]}, {"type": "type", "text": "5\n"},  # go to line 5
        {"type": "key", "keys": ["home"]}, {"type": "type", "text": "# "},
        {"type": "key", "keys": ["ctrl", "s"]}, {"type": "wait", "seconds": 1})
    assert "# @require_auth" in (desktop.layout.home / "portal/app.py").read_text()
    assert checks(desktop, uses) == [False]


def test_only_the_terminal_runs_the_homes_bashrc(desktop):
    """The code editor starts no hidden shell of its own: Geany's built-in terminal would read ~/.bashrc
    too (a task's background jobs started there ran where the agent's terminal could not see them)."""
    desktop.reset([
        {"files": [{"path": ".bashrc", "content": "echo \"$$ $(cat /proc/$PPID/comm)\" >> ~/bashrc-ran\n"},
                   {"path": "jobs.sh", "content": "#!/bin/bash\n"}]},
        {"launch": {"app": "code", "file": "jobs.sh"}}, {"launch": {"app": "terminal"}}])
    ran = desktop.layout.home / "bashrc-ran"
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and not ran.exists():
        time.sleep(0.1)
    time.sleep(2)  # a second shell would start within the editor's start-up
    assert [line.split()[1] for line in ran.read_text().splitlines()] == ["sakura"]


def test_file_manager_opens_the_folder(desktop):
    desktop.reset([{"dirs": [{"path": "Documents"}], "files": [{"path": "Documents/lease-signed.pdf", "content": "%PDF"}]},
                   {"launch": {"app": "files", "cwd": "Documents"}}])
    tree = desktop.accessibility_tree()
    assert "Documents - Thunar" in tree and "1 file" in tree


def test_browser_page_wait_reads_only_the_browser(desktop):
    """A page launched with Geany: the reset's page wait reads Chromium's tree, not Geany's (a slow or
    big app there used to eat the snapshot's budget)."""
    desktop.reset([{"files": [{"path": "src/app.py", "content": "print('hi')\n"}]},
                   {"launch": {"app": "code", "file": "src/app.py"}},
                   {"launch": {"app": "browser", "url": "http://mail.localhost/"}}])
    assert desktop._page_loaded()
    stats = desktop._a11y_reader().last_stats
    assert stats["apps"] >= 2 and stats["apps_skipped"] == stats["apps"] - 1, stats
    assert "print('hi')" in desktop.accessibility_tree()  # the observation still reads every app


def test_browser_launched_with_calc_loads(desktop):
    """LibreOffice's window opens over the page while it loads; a hidden page is not laid out for
    AT-SPI, so the old wait (a laid-out document in the tree) timed out. The load is now asked over
    DevTools, and the page is waited for in the tree only once the browser is in front."""
    for i in range(3):
        desktop.reset([{"spreadsheets": [{"path": "Documents/t.ods", "sheets": [{"name": "S", "rows": [["a"]]}]}]},
                       {"launch": {"app": "calc", "file": "Documents/t.ods"}},
                       {"launch": {"app": "browser", "url": "http://mail.localhost/"}}])
        assert desktop._browser.page_ready("http://mail.localhost/")
        # the last app launched is in front, LibreOffice's raise at the end of its load notwithstanding
        assert [w["title"] for w in desktop.controller.windows() if w["focused"]] == ["Inbox · Mail - Chromium"], i
        assert 'document web "Inbox · Mail"' in desktop.accessibility_tree()


def test_the_app_launched_last_stays_in_front_of_a_loading_office_document(desktop):
    """LibreOffice takes the focus back when its document has loaded, a moment after its window
    shows; the browser launched after it must still be in front when the episode starts."""
    for _ in range(3):  # later resets reuse the warm office and browser, where the race showed
        desktop.reset([
            {"spreadsheets": [{"path": "Documents/p.ods", "sheets": [{"name": "S", "rows": [["a", "b"]]}]}]},
            {"launch": {"app": "calc", "file": "Documents/p.ods"}},
            {"seed": {"mail": {}}},
            {"launch": {"app": "browser", "url": "http://mail.localhost/"}}])
        time.sleep(2)
        focused = [w["title"] for w in desktop.controller.windows() if w["focused"]]
        assert focused and "Chromium" in focused[0], focused
