"""Notes and code wiki through a real Chromium: edit notes, wiki edit/history/revert, validation."""

from __future__ import annotations

from playwright.sync_api import expect



def q(srv, query, **params):
    return srv.store.query("notes", query, params)


def test_create_edit_and_delete_notes(fresh, page):
    page.goto(fresh.url("notes"))
    page.get_by_role("link", name="New note").click()
    page.get_by_role("button", name="Save note").click()
    expect(page.get_by_role("alert")).to_contain_text("Give the note a title")
    page.get_by_label("Title").fill("Standup")
    page.get_by_label("Note text").fill("Ask about the release date")
    page.get_by_role("button", name="Save note").click()
    expect(page.get_by_role("status")).to_have_text("Note saved")
    assert q(fresh, "note_contains", title="Standup", contains="release date").passed
    page.get_by_role("link", name="Groceries").click()
    page.get_by_role("button", name="Delete note").click()
    assert q(fresh, "note_deleted", title="Groceries").passed


def test_wiki_edit_history_and_revert(fresh, page):
    page.goto(fresh.url("notes", "/wiki"))
    page.get_by_role("link", name="Q3 priorities").click()
    page.get_by_role("link", name="Edit page").click()
    body = page.get_by_label("Content")
    body.fill(body.input_value() + "\n## Product\n- Onboarding revamp\n- Usage analytics")
    page.get_by_label("Edit summary").fill("Add product priorities")
    page.get_by_role("button", name="Save page").click()
    expect(page.get_by_role("heading", name="Product")).to_be_visible()
    assert q(fresh, "page_contains", slug="q3-priorities", contains="usage analytics").passed
    assert q(fresh, "page_edits", title="Q3 priorities", eq=1).passed

    page.get_by_role("link", name="History").click()
    expect(page.get_by_role("heading", name="Add product priorities")).to_be_visible()
    page.get_by_role("button", name="Restore revision").click()
    assert not q(fresh, "page_contains", slug="q3-priorities", contains="usage analytics").passed
    assert q(fresh, "event_logged", kind="page_reverted", contains="q3-priorities").passed


def test_new_wiki_page(fresh, page):
    page.goto(fresh.url("notes", "/wiki/new"))
    page.get_by_label("Title").fill("Deploy guide")
    page.get_by_label("Content").fill("duplicate")
    page.get_by_role("button", name="Save page").click()
    expect(page.get_by_role("alert")).to_contain_text("already exists")
    page.get_by_label("Title").fill("Incident runbook")
    page.get_by_role("button", name="Save page").click()
    assert q(fresh, "page_created", title_contains="runbook", contains="duplicate").passed


# ---- contextual task suite v2 (issue 15): page_field reads a "key: value" line so a check parses it


def test_page_field_reads_key_value_lines(fresh, page):
    from blindact.values import Match

    assert not q(fresh, "page_field", slug="q3-priorities", key="Detected").passed  # no such line yet
    page.goto(fresh.url("notes", "/wiki/q3-priorities/edit"))
    body = page.get_by_label("Content")
    body.fill(body.input_value() + "\n- Detected: 1 March 2025, 9 AM\n- Detected by: on-call\nNot detected: here")
    page.get_by_role("button", name="Save page").click()
    expect(page.get_by_role("link", name="Edit page")).to_be_visible()
    found = q(fresh, "page_field", slug="q3-priorities", key="Detected")
    assert found.passed and found.value == "1 March 2025, 9 AM"  # "Detected by" and "Not detected" are other keys
    assert Match(date="2025-03-01").test(found.value) and not Match(date="2025-02-26").test(found.value)
    assert not q(fresh, "page_field", title="No such page", key="Detected").passed
