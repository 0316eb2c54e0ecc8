"""The function page's pause form (issue 38 item 1): pause in hold mode, see "paused" on the
page, in the list row and in a new run's why-waiting, then resume and see the run finish and
both changes in the audit."""

from playwright.sync_api import Page, expect

from tests.browser.browser_support import Server, screenshot, until

SLUG = "ui-test-shout"


def test_pause_hold_see_it_everywhere_and_resume(page: Page, server: Server) -> None:
    page.goto(f"{server.url}/functions/{SLUG}")
    expect(page.locator("#pause-state")).to_contain_text("Not paused")
    form = page.locator("#pause-form")
    form.get_by_label("Hold: start their runs, which wait until resumed").check()
    form.get_by_role("button", name="Pause").click()
    try:
        expect(page.get_by_role("status").first).to_contain_text("Paused (hold).")
        expect(page.locator("#paused-badge")).to_have_text("paused")
        expect(page.locator("#pause-state")).to_contain_text("Paused (hold)")
        expect(page.locator("#pause-state")).to_contain_text("by dev mode (no login)")
        run_id = server.run_of(server.send("ui/shout", {"word": "held"}))
        page.goto(f"{server.url}/runs/{run_id}")
        expect(page.locator("#run-state")).to_contain_text("paused: the function was paused")
        page.goto(f"{server.url}/functions")
        row = page.locator("#functions-body > tr", has_text="Shout")
        expect(row.locator(".paused")).to_have_text("paused")
        page.goto(f"{server.url}/functions/{SLUG}")
        screenshot(page, "function-paused")
    finally:
        page.goto(f"{server.url}/functions/{SLUG}")
        page.locator("#resume-form").get_by_role("button", name="Resume").click()
    expect(page.get_by_role("status").first).to_contain_text("Resumed")
    expect(page.locator("#pause-state")).to_contain_text("Not paused")
    expect(page.locator("#paused-badge")).to_have_count(0)
    audit = page.locator("#pause-audit tbody tr")
    expect(audit).to_have_count(2)
    expect(audit.first).to_contain_text("resumed")
    expect(audit.nth(1)).to_contain_text("paused (hold, runs under way: pause)")
    done = until(lambda: server.get(f"/v1/runs/{run_id}")["data"]["status"] == "Completed", "run")
    assert done
