"""A function's lanes in the UI: its page lists the busy lanes with their holder, fence, queue
length and the run next in line; a lane's page shows its whole line in order."""

from playwright.sync_api import Page, expect

from tests.browser.browser_support import Server, screenshot, until


def test_the_function_page_shows_its_lanes_and_a_lanes_line(page: Page, server: Server) -> None:
    ids = [server.send("ui/lane", {"who": "acme-ui"}) for _ in range(3)]
    runs = [until(lambda e=e: server.run_of(e), "the run of an event") for e in ids]
    page.goto(server.url + "/functions/ui-test-queue-lane")
    row = page.locator("#lanes table.lanes tbody tr", has_text="acme-ui")
    expect(row.locator("td.queued")).to_have_text("2")
    expect(row).to_contain_text(runs[0])  # the holder
    expect(row.locator("td").nth(5)).to_have_text(runs[1])  # next in line
    screenshot(page, "function-lanes")

    row.get_by_role("link", name="view line").click()
    expect(page.locator("#lane-holder")).to_contain_text(f"Run {runs[0]}")
    expect(page.locator("#lane-holder")).to_contain_text("fencing token 1")
    expect(page.locator("#lane-queued")).to_have_text("2 runs in line.")
    members = page.locator("#lane-members tbody tr td:nth-child(2)")
    expect(members).to_have_text([runs[1], runs[2]])

    page.goto(server.url + "/functions/ui-test-queue-lane/lanes")
    page.get_by_label("Find the lane of a key").fill("acme-ui")
    page.get_by_role("button", name="Find").click()
    expect(page.locator("table.lanes tbody tr td.queued")).to_have_text(["2"])
    page.get_by_label("Find the lane of a key").fill("nobody")
    page.get_by_role("button", name="Find").click()
    expect(page.locator("#lanes-none")).to_contain_text("No busy lane has the key")

    page.goto(f"{server.url}/runs/{runs[2]}")  # a run in line links to its lane
    page.locator("#run-lane").get_by_role("link").click()
    expect(page.locator("#lane-holder")).to_contain_text(f"Run {runs[0]}")


def test_an_unknown_lane_or_a_function_without_lanes_says_so(page: Page, server: Server) -> None:
    page.goto(server.url + "/lanes/" + "f" * 32)
    expect(page.get_by_role("heading", level=1)).to_have_text("Lane not found")
    page.goto(server.url + "/functions/ui-test-greet/lanes")
    expect(page.locator("main")).to_contain_text("declares no lane")
    page.goto(server.url + "/functions/ui-test-queue-lane/lanes?cursor=bogus")
    expect(page.locator("main")).to_contain_text("cursor is not one this listing gave")
