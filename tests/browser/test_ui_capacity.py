"""The Functions page's live capacities: set one from its form, see the drift badge while the
code declares another value, reset it to the declared one."""

from playwright.sync_api import Locator, Page, expect

from tests.browser.browser_support import Server, screenshot


def _capacities(page: Page) -> Locator:
    """The Printer function's live-capacity rows, its details opened."""
    fn = page.locator("#functions-body > tr", has_text="Printer")
    fn.locator("details > summary").click()
    return fn.locator("table.capacities tbody tr")


def test_set_a_capacity_see_the_drift_and_reset_it(page: Page, server: Server) -> None:
    page.goto(server.url + "/functions")
    row = _capacities(page)
    expect(row).to_contain_text("scope ui-printer")
    expect(row.locator(".drift")).to_have_count(0)
    row.get_by_label("New capacity of scope ui-printer").fill("4")
    row.get_by_role("button", name="Set").click()
    expect(page.get_by_role("status").first).to_contain_text("scope ui-printer: capacity 4")
    fn = page.locator("#functions-body > tr", has_text="Printer")
    expect(fn.locator("td").first.locator(".drift")).to_have_text("drift")  # seen unopened
    row = _capacities(page)
    expect(row.locator(".drift")).to_have_text("drift")
    expect(row.locator("td").nth(2)).to_have_text("2")  # what the code declares
    screenshot(page, "functions-capacity-drift")
    row.get_by_role("button", name="Reset to 2").click()
    expect(page.get_by_role("status").first).to_contain_text("scope ui-printer: capacity 2")
    row = _capacities(page)
    expect(row.locator(".drift")).to_have_count(0)


def test_a_rate_meter_is_a_live_capacity_set_per_window(page: Page, server: Server) -> None:
    page.goto(server.url + "/functions")
    fn = page.locator("#functions-body > tr", has_text="Metered")
    fn.locator("details > summary").click()
    row = fn.locator("table.capacities tbody tr", has_text="meter ui-stripe")
    expect(row.locator("td").nth(1)).to_have_text("5")
    row.get_by_label("New capacity of meter ui-stripe").fill("100001")
    row.get_by_role("button", name="Set").click()
    expect(page.get_by_role("alert").first).to_contain_text("from 1 to 100000")
    fn = page.locator("#functions-body > tr", has_text="Metered")
    fn.locator("details > summary").click()
    row = fn.locator("table.capacities tbody tr", has_text="meter ui-stripe")
    expect(row).to_contain_text("Per window")
    row.get_by_label("New capacity of meter ui-stripe").fill("2")
    row.get_by_role("button", name="Set").click()
    expect(page.get_by_role("status").first).to_contain_text("meter ui-stripe: capacity 2")
