"""Admin console through a real Chromium: firewall, swap, thermostat, users, backups; impossible values refused."""

from __future__ import annotations

from playwright.sync_api import expect



def q(srv, query, **params):
    return srv.store.query("admin", query, params)


def test_turn_firewall_off_and_add_rule(fresh, page):
    assert q(fresh, "firewall_enabled").passed
    page.goto(fresh.url("admin"))
    page.get_by_role("link", name="Firewall", exact=True).click()
    page.get_by_role("button", name="Turn off firewall").click()
    expect(page.get_by_role("status")).to_have_text("Firewall turned off")
    r = q(fresh, "firewall_enabled")
    assert not r.passed and r.value is False
    page.get_by_label("Port").fill("70000")
    page.get_by_role("button", name="Add rule").click()
    expect(page.get_by_role("alert")).to_contain_text("1 to 65535")
    page.get_by_label("Port").fill("5432")
    page.get_by_label("Source").fill("10.0.0.0/8")
    page.get_by_role("button", name="Add rule").click()
    assert q(fresh, "firewall_rule", port=5432, action="allow", protocol="tcp").passed


def test_impossible_swap_is_refused(fresh, page):
    page.goto(fresh.url("admin", "/storage"))
    page.get_by_label("Swap size (GB)").fill("20000")
    page.get_by_role("button", name="Apply swap size").click()
    expect(page.get_by_role("alert")).to_contain_text("Not enough disk space")
    assert q(fresh, "swap_size_gb", eq=2).passed
    assert q(fresh, "event_logged", kind="swap_refused", contains="20000").passed
    page.get_by_label("Swap size (GB)").fill("8")
    page.get_by_role("button", name="Apply swap size").click()
    expect(page.get_by_role("status")).to_have_text("Swap updated")
    r = q(fresh, "swap_size_gb", ge=8, le=8)
    assert r.passed and r.value == 8


def test_thermostat_range(fresh, page):
    page.goto(fresh.url("admin", "/devices"))
    page.get_by_label("Target temperature (°F)").first.fill("160")
    page.get_by_role("button", name="Set Office thermostat").click()
    expect(page.get_by_role("alert")).to_contain_text("45–90 °F")
    assert q(fresh, "thermostat_set_f", device="Office thermostat", eq=70).passed
    page.get_by_label("Target temperature (°F)").first.fill("74")
    page.get_by_role("button", name="Set Office thermostat").click()
    assert q(fresh, "thermostat_set_f", device="office", eq=74).passed
    assert q(fresh, "thermostat_set_f", device="Server room", eq=64).passed


def test_users_roles_and_backups(fresh, page):
    page.goto(fresh.url("admin", "/users"))
    page.get_by_label("Role for Marcus Chen", exact=True).select_option("admin")
    page.get_by_role("button", name="Save role for Marcus Chen").click()
    assert q(fresh, "user_state", username="mchen", role="admin").passed
    page.get_by_label("Role for Alex Morgan", exact=True).select_option("viewer")
    page.get_by_role("button", name="Save role for Alex Morgan").click()
    expect(page.get_by_role("alert")).to_contain_text("your own admin access")
    assert q(fresh, "user_state", username="amorgan", role="admin").passed
    page.get_by_label("Full name").fill("Dana Whitfield")
    page.get_by_label("Username").fill("Dana W")
    page.get_by_role("button", name="Add user").click()
    expect(page.get_by_text("Usernames are")).to_be_visible()
    page.get_by_label("Username").fill("dwhitfield")
    page.get_by_label("Role", exact=True).select_option("editor")
    page.get_by_role("button", name="Add user").click()
    assert q(fresh, "user_state", username="dwhitfield", role="editor", active=True).passed

    page.goto(fresh.url("admin", "/backups"))
    page.get_by_role("button", name="Delete backup nightly-2025-03-01").click()
    assert not q(fresh, "backup_exists", name="nightly-2025-03-01").passed
    page.get_by_label("Backup name").fill("manual-before-upgrade")
    page.get_by_role("button", name="Create backup").click()
    assert q(fresh, "backup_exists", name="manual-before-upgrade").passed
    assert q(fresh, "backup_count", eq=3).passed


# ---- contextual task suite v2 (issue 15): firewall_rule_sources lists where a port is open from


def test_firewall_rule_sources(fresh, page):
    from blindact.values import Match

    assert not q(fresh, "firewall_rule_sources", port=3389).passed  # no rule yet
    page.goto(fresh.url("admin", "/firewall"))
    for source in ("203.0.113.0/24", "0.0.0.0/0"):
        page.get_by_label("Port").fill("3389")
        page.get_by_label("Source").fill(source)
        page.get_by_role("button", name="Add rule").click()
        expect(page.get_by_role("status")).to_contain_text("Rule added")
    found = q(fresh, "firewall_rule_sources", port=3389)
    assert found.passed and found.value == "203.0.113.0/24 | 0.0.0.0/0"
    assert Match(regex=r".*0\.0\.0\.0/0.*").test(found.value)
    assert not q(fresh, "firewall_rule_sources", port=3389, action="deny").passed


def test_person_active_counts_a_new_account_as_well_as_the_old_one(fresh, page):
    assert not q(fresh, "person_active", name="Tom Becker").passed  # tbecker is seeded disabled
    page.goto(fresh.url("admin", "/users"))
    page.get_by_label("Full name").fill("Tom Becker (handover)")
    page.get_by_label("Username").fill("tom.b")
    page.locator("form[action='/users'] select[name=role]").select_option("viewer")
    page.get_by_role("button", name="Add user").click()
    expect(page.get_by_role("status")).to_be_visible()
    found = q(fresh, "person_active", name="tom becker")
    assert found.passed and found.value == ["tom.b"]
    assert not q(fresh, "person_active", name="Tom Beckerson").passed  # whole words only
    assert q(fresh, "person_active", name="Sofia Alvarez").value == ["salvarez"]
