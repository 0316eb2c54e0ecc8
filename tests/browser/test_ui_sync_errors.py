"""The Apps page shows a refused sync as the lines it is: the CEL error's excerpt and, under
it, the caret at the column, in a fixed-width font; an app that never synced has its card."""

from playwright.sync_api import Page, expect

from tests.browser.browser_support import Server, screenshot, submit
from tests.support.stand_in_app import BAD_CEL, StandIn


def test_a_refused_sync_shows_its_caret_under_the_column(page: Page, server: Server) -> None:
    with StandIn(BAD_CEL) as app:
        app.register_to = server.url
        page.goto(server.url + "/apps")
        page.get_by_label("Serve URL", exact=True).fill(app.url)
        submit(page, page.get_by_role("button", name="Sync", exact=True))
    expect(page.get_by_role("alert")).to_contain_text("not valid CEL")
    card = page.locator("article.unsynced", has_text=app.url)
    expect(card).to_contain_text("Sync failed")
    error = card.locator("pre.sync-error")
    lines = error.inner_text().splitlines()  # as rendered: a collapsed line break is a space
    [at] = [i for i, line in enumerate(lines) if line.endswith(" 1 +")]
    assert lines[at + 1].rstrip().endswith("^")
    assert lines[at + 1].index("^") == len(lines[at]) - 1  # under the `+`
    font = error.evaluate("e => getComputedStyle(e).fontFamily")
    assert "mono" in font.lower()
    alert_lines = page.get_by_role("alert").inner_text().splitlines()
    assert any(line.rstrip().endswith("^") for line in alert_lines)  # the note keeps lines too
    screenshot(page, "apps-refused-sync")
