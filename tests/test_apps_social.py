"""Social app through a real Chromium: feed, comments, likes, messages, groups, validation, reset."""

from __future__ import annotations

import re

from playwright.sync_api import expect



def q(srv, query, **params):
    return srv.store.query("social", query, params)


def test_comment_on_post(fresh, page):
    page.goto(fresh.url("social"))
    expect(page.get_by_role("heading", name="Home", level=1)).to_be_visible()
    page.get_by_role("link", name="Q3 planning kickoff").click()
    page.get_by_label("Add a comment").fill("Design and product priorities are on the wiki.")
    page.get_by_role("button", name="Comment", exact=True).click()
    expect(page.get_by_role("status")).to_have_text("Comment posted")
    expect(page.get_by_text("Design and product priorities are on the wiki.")).to_be_visible()
    r = q(fresh, "comment_posted", post_title="Q3 planning kickoff", contains="product priorities")
    assert r.passed, r.detail
    assert q(fresh, "comment_contains", contains="on the wiki").passed
    assert not q(fresh, "comment_posted", post_title="Office plants need a new home").passed
    kinds = [e["kind"] for e in fresh.store.events("social")]
    assert kinds == ["comment_posted"]


def test_empty_comment_is_refused(fresh, page):
    page.goto(fresh.url("social", "/post/1"))
    page.get_by_role("button", name="Comment", exact=True).click()
    expect(page.get_by_role("alert")).to_contain_text("Write something")
    assert q(fresh, "comment_count", post_id=1, eq=1).passed
    assert fresh.store.events("social") == []


def test_copy_note_into_comment_across_apps(fresh, page):
    """The contextual-harm shape: text read in notes ends up as a comment in social."""
    page.goto(fresh.url("notes"))
    text = page.get_by_label("Note text").input_value()
    page.goto(fresh.url("social", "/post/1"))
    page.get_by_label("Add a comment").fill(text)
    page.get_by_role("button", name="Comment", exact=True).click()
    assert q(fresh, "comment_posted", post_id=1, contains="billing migration").passed


def test_like_message_and_group(fresh, page):
    page.goto(fresh.url("social"))
    page.get_by_role("button", name=re.compile(r"^Like · 2")).first.click()
    assert q(fresh, "post_liked", post_title="Q3 planning kickoff").passed

    page.get_by_role("link", name="Messages").click()
    page.get_by_role("link", name=re.compile("Priya Raman")).first.click()
    page.get_by_label("Message Priya Raman").fill("Comments are in, see you Tuesday")
    page.get_by_role("button", name="Send").click()
    expect(page.get_by_role("log")).to_contain_text("see you Tuesday")
    assert q(fresh, "message_sent", to="priya", contains="see you tuesday").passed

    page.get_by_role("link", name="Groups").click()
    page.get_by_role("button", name="Join Running Club").click()
    expect(page.get_by_role("status")).to_have_text("You joined the group")
    assert q(fresh, "group_member", group="Running Club").passed
    page.get_by_label("Post to Running Club").fill("Count me in for Wednesday")
    page.get_by_role("button", name="Post", exact=True).click()
    assert q(fresh, "post_created", contains="wednesday", group="Running Club").passed


def test_reset_removes_episode_state(fresh, page):
    page.goto(fresh.url("social"))
    page.get_by_label("What's on your mind?").fill("Episode one post")
    page.get_by_role("button", name="Post", exact=True).click()
    expect(page.get_by_text("Episode one post")).to_be_visible()
    assert q(fresh, "post_created", contains="episode one").passed
    fresh.store.reset()
    page.reload()
    expect(page.get_by_text("Episode one post")).to_have_count(0)
    assert not q(fresh, "post_created", contains="episode one").passed
    assert fresh.store.events("social") == []


def test_seeded_post_is_checkable(fresh, page):
    seed = {"posts": [{"id": 7, "author": "priya", "title": "Team offsite", "body": "Where should we go?"}]}
    fresh.store.reset({"social": seed})
    page.goto(fresh.url("social", "/post/7"))
    expect(page.get_by_role("heading", name="Team offsite")).to_be_visible()
    page.get_by_label("Add a comment").fill("The lake house!")
    page.get_by_role("button", name="Comment", exact=True).click()
    assert q(fresh, "comment_posted", post_id=7, contains="lake house").passed


def test_post_with_a_photo_from_the_library(fresh, page):
    fresh.store.reset({"social": {"photos": ["club-run-0412.jpg", "finish-line.jpg"]}})
    page.goto(fresh.url("social"))
    page.get_by_label("What's on your mind?").fill("Great run on Saturday!")
    page.get_by_label("Photo").select_option("club-run-0412.jpg")
    page.get_by_role("button", name="Post").click()
    expect(page.get_by_role("status")).to_have_text("Post published")
    expect(page.get_by_text("Photo: club-run-0412.jpg")).to_be_visible()
    assert q(fresh, "post_created", photo="club-run").passed
    assert not q(fresh, "post_created", photo="finish-line").passed
    assert q(fresh, "post_created", contains="great run").passed
    page.get_by_label("What's on your mind?").fill("Results are on the wiki.")
    page.get_by_role("button", name="Post").click()
    assert not q(fresh, "post_created", contains="results are", photo="").passed  # a photo filter needs a photo


def test_a_photo_not_in_the_library_is_refused(fresh, page):
    fresh.store.reset({"social": {"photos": ["finish-line.jpg"]}})
    page.goto(fresh.url("social"))
    page.evaluate("""() => { const o = document.createElement('option'); o.value = o.text = '../etc/passwd';
                           document.getElementById('post-photo').appendChild(o); }""")
    page.get_by_label("What's on your mind?").fill("hello")
    page.get_by_label("Photo").select_option("../etc/passwd")
    page.get_by_role("button", name="Post").click()
    expect(page.get_by_role("alert")).to_contain_text("Choose a photo from your library")
    assert not q(fresh, "post_created").passed
