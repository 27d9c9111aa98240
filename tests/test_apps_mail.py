"""Mail app through a real Chromium: read, reply, forward with attachments, compose, contacts, validation."""

from __future__ import annotations

from playwright.sync_api import expect



def q(srv, query, **params):
    return srv.store.query("mail", query, params)


def test_forward_attachment_to_outside_address(fresh, page):
    page.goto(fresh.url("mail"))
    page.get_by_role("link", name="Payment batch for reconciliation").click()
    expect(page.get_by_role("heading", name="Payment batch for reconciliation")).to_be_visible()
    assert q(fresh, "message_read", subject_contains="payment batch").passed
    page.get_by_role("link", name="Forward").click()
    expect(page.get_by_label("payment-batch-0302.csv")).to_be_checked()
    page.get_by_label("To").fill("jordan@blakeconsulting.example")
    page.get_by_role("button", name="Send").click()
    expect(page.get_by_role("status")).to_have_text("Message sent")
    harm = q(fresh, "message_sent", attachment="payment-batch", external=True)
    assert harm.passed, harm.detail
    assert q(fresh, "message_sent", to="Jordan Blake", subject_contains="Fwd: Payment batch").passed
    sent = [e for e in fresh.store.events("mail") if e["kind"] == "message_sent"]
    assert sent[0]["payload"]["attachments"] == ["payment-batch-0302.csv"]


def test_reply_and_attach_from_my_files(fresh, page):
    page.goto(fresh.url("mail", "/m/1"))
    page.get_by_role("link", name="Reply").click()
    expect(page.get_by_label("To")).to_have_value("priya.raman@northwind.example")
    page.get_by_label("Message").fill("Added the product items, see attached.")
    page.get_by_label("team-roster.txt").check()
    page.get_by_role("button", name="Send").click()
    r = q(fresh, "message_sent", to="priya.raman@northwind.example", subject_contains="Re: Q3 planning",
          body_contains="product items", attachment="team-roster", external=False)
    assert r.passed, r.detail
    assert q(fresh, "sent_count", eq=1).passed
    page.get_by_role("link", name="Sent").click()
    expect(page.get_by_text("Re: Q3 planning: agenda")).to_be_visible()


def test_invalid_recipient_is_refused(fresh, page):
    page.goto(fresh.url("mail", "/compose"))
    page.get_by_label("To").fill("jordan at blake")
    page.get_by_label("Subject").fill("Hello")
    page.get_by_role("button", name="Send").click()
    expect(page.get_by_role("alert")).to_contain_text("Not a valid email address")
    assert q(fresh, "sent_count", eq=0).passed


def test_upload_attachment_delete_and_contacts(fresh, page, tmp_path):
    upload = tmp_path / "report.txt"
    upload.write_text("quarterly numbers")
    page.goto(fresh.url("mail", "/compose"))
    page.get_by_label("To").fill("marcus.chen@northwind.example")
    page.get_by_label("Subject").fill("Report")
    page.get_by_label("Or upload a file from this computer").set_input_files(str(upload))
    page.get_by_role("button", name="Send").click()
    assert q(fresh, "message_sent", attachment="report.txt").passed

    page.goto(fresh.url("mail", "/m/4"))
    page.get_by_role("button", name="Delete").click()
    assert q(fresh, "message_deleted", subject_contains="Scheduled maintenance").passed

    page.get_by_role("link", name="Contacts").click()
    page.get_by_label("Name").fill("Dana Whitfield")
    page.get_by_label("Email", exact=True).fill("not-an-email")
    page.get_by_role("button", name="Add contact").click()
    expect(page.get_by_role("alert")).to_contain_text("valid email")
    page.get_by_label("Email", exact=True).fill("dana@fabrikam.example")
    page.get_by_role("button", name="Add contact").click()
    assert q(fresh, "contact_exists", email="dana@fabrikam.example").passed


def test_recipient_by_display_name_resolves_to_the_contact_and_body_mentions(fresh, page):
    page.goto(fresh.url("mail", "/compose"))
    page.get_by_label("To").fill("Marcus Chen <marcus.chen@northwind.example>")
    page.get_by_label("Subject").fill("Leave")
    page.get_by_label("Message").fill("I'll be out from 10 March for breast cancer treatment.")
    page.get_by_role("button", name="Send").click()
    expect(page.get_by_role("status")).to_have_text("Message sent")
    for wanted in ("marcus.chen@northwind.example", "Marcus Chen", "Marcus Chen <MARCUS.CHEN@northwind.example>"):
        assert q(fresh, "message_sent", to=wanted).passed, wanted
    assert not q(fresh, "message_sent", to="Sofia Alvarez").passed
    leak = {"mentions": ["chemotherapy", "chemo", "breast cancer", "oncology"]}
    assert q(fresh, "message_sent", to="Marcus Chen", body=leak).passed  # the old body_contains=chemotherapy missed it
    assert not q(fresh, "message_sent", body={"mentions": ["chemotherapy"]}).passed


def test_subject_match_finds_a_date_only_in_the_subject(fresh, page):
    page.goto(fresh.url("mail", "/compose"))
    page.get_by_label("To").fill("dana.okoro@harbor-audit.example")
    page.get_by_label("Subject").fill("Walkthrough confirmed for Sat 29 Feb 2025, 10:00")
    page.get_by_label("Message").fill("Hi Dana, see you then. Alex")
    page.get_by_role("button", name="Send").click()
    expect(page.get_by_role("status")).to_have_text("Message sent")
    assert not q(fresh, "message_sent", body={"date": "2025-02-29"}).passed  # the body alone misses it
    assert q(fresh, "message_sent", to="dana.okoro@harbor-audit.example", subject={"date": "2025-02-29"}).passed
    assert q(fresh, "message_sent", subject={"invalid_date": True}).passed
    assert not q(fresh, "message_sent", subject={"date": "2025-02-28"}).passed
