"""The web UI in headless Chromium against a real Weir server and a real SDK app."""

import re
import uuid
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Page, expect

from tests.browser.browser_support import Server, screenshot, submit

pytestmark = pytest.mark.browser


def _tag() -> str:
    return uuid.uuid4().hex[:8]


def test_send_an_event_from_the_form_and_follow_its_run(page: Page, server: Server) -> None:
    who = f"ada-{_tag()}"
    page.goto(server.url + "/events")
    page.get_by_label("Event name").fill("ui/greet")
    page.get_by_label("Data (a JSON object)").fill(f'{{"who": "{who}"}}')
    page.get_by_role("button", name="Send event").click()
    expect(page.get_by_role("status")).to_contain_text("Event ui/greet sent")
    item = page.locator("li.event", has_text="ui/greet").first
    expect(item).to_be_visible()
    item.locator("summary").click()
    expect(item.locator("pre.json")).to_contain_text(who)
    expect(item.locator("a[href^='/runs/']")).to_be_visible()
    screenshot(page, "events")
    item.locator("a[href^='/runs/']").first.click()
    expect(page.locator("#run h1")).to_contain_text("Completed", timeout=20_000)
    expect(page.locator("#run-output")).to_contain_text(f"hello {who}")
    expect(page.locator("#waterfall li", has_text="attempt 1").first).to_be_visible()
    expect(page.locator(".steps summary", has_text="compose")).to_be_visible()
    screenshot(page, "run-completed")


def test_the_form_checks_json_before_sending(page: Page, server: Server) -> None:
    page.goto(server.url + "/events")
    page.get_by_label("Event name").fill("ui/greet")
    page.get_by_label("Data (a JSON object)").fill('{"who": ')
    page.get_by_role("button", name="Send event").click()
    expect(page.locator("#ev-error")).to_contain_text("not valid JSON")
    expect(page.get_by_label("Data (a JSON object)")).to_have_attribute("aria-invalid", "true")
    expect(page.get_by_label("Data (a JSON object)")).to_be_focused()
    page.get_by_label("Data (a JSON object)").fill("[1, 2]")
    page.get_by_role("button", name="Send event").click()
    expect(page.locator("#ev-error")).to_contain_text("must be a JSON object")
    assert page.url.endswith("/events")


def test_new_runs_appear_live_and_filters_narrow_the_list(page: Page, server: Server) -> None:
    page.goto(server.url + "/runs")
    run_id = server.run_of(server.send("ui/fail", {"n": _tag()}))
    row = page.locator(f"tr[data-id='{run_id}']")
    expect(row).to_be_visible(timeout=20_000)  # arrived by polling, no reload
    expect(row).to_contain_text("Failed", timeout=20_000)
    page.get_by_label("Function").select_option("ui-test-fail")
    page.get_by_role("checkbox", name="Failed", exact=True).check()
    submit(page, page.get_by_role("button", name="Apply filters"))
    expect(page).to_have_url(re.compile(r"function=ui-test-fail&status=FAILED"))
    expect(page.locator(f"tr[data-id='{run_id}']")).to_be_visible()
    statuses = page.locator("#runs-body tr td:first-child").all_inner_texts()
    assert statuses and set(statuses) == {"Failed"}
    functions = page.locator("#runs-body tr td:nth-child(3)").all_inner_texts()
    assert set(functions) == {"Always fails"}
    page.get_by_label("Function").select_option("ui-test-greet")
    submit(page, page.get_by_role("button", name="Apply filters"))
    expect(page.locator(f"tr[data-id='{run_id}']")).to_have_count(0)
    page.goto(server.url + "/runs")
    screenshot(page, "runs")


def test_cancel_a_sleeping_run(page: Page, server: Server) -> None:
    run_id = server.run_of(server.send("ui/nap", {"n": _tag()}))
    page.goto(f"{server.url}/runs/{run_id}")
    expect(page.locator(".waiting")).to_contain_text("sleeping until", timeout=20_000)
    expect(page.locator("#waterfall")).to_contain_text("Sleep · long-nap")
    screenshot(page, "run-sleeping")
    page.once("dialog", lambda dialog: dialog.accept())  # "Cancel run …?"
    page.get_by_role("button", name="Cancel run").click()
    expect(page.get_by_role("status").first).to_contain_text("Run cancelled")
    expect(page.locator("#run h1")).to_contain_text("Cancelled")
    expect(page.get_by_role("button", name="Cancel run")).to_have_count(0)


def test_rerun_a_failed_run(page: Page, server: Server) -> None:
    run_id = server.run_of(server.send("ui/fail", {"n": _tag()}))
    page.goto(f"{server.url}/runs/{run_id}")
    expect(page.locator("#run h1")).to_contain_text("Failed", timeout=20_000)
    expect(page.locator("#run-output")).to_contain_text("the upstream said no")
    page.get_by_role("button", name="Rerun", exact=True).click()
    expect(page.get_by_role("status").first).to_contain_text(f"rerun of {run_id}")
    assert urlsplit(page.url).path != f"/runs/{run_id}"
    expect(page.locator(".facts")).to_contain_text(run_id)  # "Rerun of" links back
    expect(page.locator("#run h1")).to_contain_text("Failed", timeout=20_000)


def test_throttled_run_says_why_it_waits(page: Page, server: Server) -> None:
    tag = _tag()
    server.run_of(server.send("ui/throttled", {"n": tag}))
    second = server.run_of(server.send("ui/throttled", {"n": tag + "b"}))
    page.goto(f"{server.url}/runs/{second}")
    expect(page.locator(".waiting")).to_contain_text("throttle")
    screenshot(page, "run-throttled")


def test_an_event_that_started_no_run_says_why(page: Page, server: Server) -> None:
    server.run_of(server.send("ui/limited", {"n": 1}))
    skipped = server.send("ui/limited", {"n": 2})
    page.goto(f"{server.url}/events/{skipped}")
    effect = page.locator("#effects li.effect")
    expect(effect).to_contain_text("Skipped by the rate limit")
    expect(effect).to_contain_text("Rate limited")  # the function
    expect(effect).to_contain_text("rate_limit: over 1 per")  # the rule's own words
    page.goto(f"{server.url}/events?name=ui/limited")
    item = page.locator(f"li.event[data-id='{skipped}'] .event-runs")
    expect(item).to_contain_text("Skipped by the rate limit")


def test_copy_run_id(page: Page, server: Server) -> None:
    run_id = server.run_of(server.send("ui/greet", {"who": _tag()}))
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.goto(f"{server.url}/runs/{run_id}")
    page.get_by_role("button", name="Copy run id").click()
    expect(page.locator(".run-id .copied")).to_have_text("Copied")
    assert page.evaluate("navigator.clipboard.readText()") == run_id


def test_unknown_run_gets_a_friendly_page(page: Page, server: Server) -> None:
    answer = page.goto(server.url + "/runs/01NOSUCHRUN0000000000000000")
    assert answer is not None and answer.status == 404
    expect(page.locator("h1")).to_have_text("Run not found")
    expect(page.locator("main")).to_contain_text("There is no run with id")
    answer = page.goto(server.url + "/no/such/page")
    assert answer is not None and answer.status == 404
    expect(page.locator("h1")).to_have_text("Page not found")


def test_functions_and_apps_pages(page: Page, server: Server) -> None:
    page.goto(server.url + "/functions")
    card = page.locator("#functions-body > tr", has_text="Throttled")
    expect(card).to_contain_text("throttle: 1 at once, then 1 every 1 h")
    expect(card).to_contain_text("event: ui/throttled")
    screenshot(page, "functions")
    page.goto(server.url + "/apps")
    card = page.locator("article", has_text="ui-test")
    expect(card).to_contain_text("Synced")
    card.get_by_role("button", name="Sync again").click()
    expect(page.get_by_role("status").first).to_contain_text("Synced http://127.0.0.1")
    screenshot(page, "apps")


def test_every_control_has_a_label_and_the_keyboard_reaches_main(
    page: Page, server: Server
) -> None:
    for path in ("/runs", "/events", "/apps", "/functions", "/functions/ui-test-greet"):
        page.goto(server.url + path)
        unlabeled = page.evaluate(
            """() => [...document.querySelectorAll('input:not([type=hidden]), select, textarea')]
                 .filter((el) => !el.labels || el.labels.length === 0)
                 .map((el) => el.name || el.id)"""
        )
        assert unlabeled == [], f"{path}: controls without a label: {unlabeled}"
    page.goto(server.url + "/runs")
    page.keyboard.press("Tab")
    expect(page.get_by_role("link", name="Skip to content")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator("main")).to_be_focused()


def test_the_pages_break_no_rule_of_their_content_security_policy(
    page: Page, server: Server
) -> None:
    refused: list[str] = []
    page.on(
        "console", lambda msg: refused.append(msg.text) if "Security Policy" in msg.text else None
    )
    run_id = server.run_of(server.send("ui/greet", {"who": _tag()}))
    page.goto(f"{server.url}/runs/{run_id}")
    expect(page.locator("#run h1")).to_contain_text("Completed", timeout=20_000)
    expect(page.locator(".bar").first).to_be_attached()  # sized by inline style attributes
    for path in ("/runs", "/events", "/functions", "/apps", "/functions/ui-test-limited"):
        page.goto(server.url + path)
    page.get_by_role("button", name="Simulate").click()  # the playground's bars and ticks
    expect(page.locator("#pg-timeline")).to_be_visible()
    page.wait_for_timeout(2000)  # a poll of the live lists, by app.js
    assert refused == []
