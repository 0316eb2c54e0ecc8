"""Acting from the UI, the lists, the looks, and the flow-control playground, in headless
Chromium against a real Weir server and a real SDK app (tests/browser/conftest.py)."""

import json
import re
import uuid
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser.browser_support import FUNCTIONS, Server, screenshot, submit, until

pytestmark = pytest.mark.browser
PHONE = {"width": 390, "height": 844}


def _tag() -> str:
    return uuid.uuid4().hex[:8]


def _run(server: Server, run_id: str) -> dict[str, Any]:
    data: dict[str, Any] = server.get(f"/v1/runs/{run_id}")["data"]
    return data


def _ended(server: Server, run_id: str) -> dict[str, Any]:
    def done() -> dict[str, Any] | None:
        run = _run(server, run_id)
        return run if run["status"] in ("Completed", "Failed", "Cancelled") else None

    found: dict[str, Any] = until(done, f"run {run_id} to end")
    return found


# -- 6. actions --------------------------------------------------------------------------------
def test_rerun_from_a_chosen_step_keeps_the_steps_before_it(page: Page, server: Server) -> None:
    who = f"grace-{_tag()}"
    run_id = server.run_of(server.send("ui/greet", {"who": who}))
    first = _ended(server, run_id)
    page.goto(f"{server.url}/runs/{run_id}")
    page.get_by_label("From step").select_option(label="compose")
    page.get_by_role("button", name="Rerun from this step").click()
    expect(page.get_by_role("status").first).to_contain_text("keeping the steps before")
    expect(page.locator("#run h1")).to_contain_text("Completed", timeout=20_000)
    new_id = page.url.split("/runs/")[1].split("?")[0]
    again = _run(server, new_id)
    assert again["original_run_id"] == run_id
    kept = next(s for s in again["steps"] if s["name"] == "look-up")
    original = next(s for s in first["steps"] if s["name"] == "look-up")
    # copied when the rerun was made, before its first call: look-up did not run again
    assert kept["result"] == original["result"] and kept["at"] <= again["run_started_at"]
    expect(page.locator("#run-output")).to_contain_text(f"hello {who}")


def test_invoke_a_function_with_a_payload(page: Page, server: Server) -> None:
    who = f"inv-{_tag()}"
    page.goto(f"{server.url}/functions/ui-test-greet")
    page.get_by_label("Data (a JSON object)").fill(json.dumps({"who": who}))
    page.get_by_role("button", name="Invoke").click()
    expect(page.get_by_role("status").first).to_contain_text("Invoked ui-test-greet")
    expect(page.locator("#run h1")).to_contain_text("Completed", timeout=20_000)
    expect(page.locator("#run-output")).to_contain_text(f"hello {who}")
    page.goto(f"{server.url}/functions/ui-test-greet")
    page.get_by_label("Data (a JSON object)").fill("[1]")
    page.get_by_role("button", name="Invoke").click()
    expect(page.locator(".note.bad")).to_contain_text("must be a JSON object")


def test_edit_and_replay_an_event(page: Page, server: Server) -> None:
    tag = _tag()
    event_id = server.send("ui/greet", {"who": f"orig-{tag}"})
    page.goto(f"{server.url}/events/{event_id}")
    page.get_by_role("link", name="Edit & replay").click()
    expect(page.locator("#send-h")).to_contain_text(event_id)
    expect(page.get_by_label("Event name")).to_have_value("ui/greet")
    data = page.get_by_label("Data (a JSON object)")
    expect(data).to_have_value(re.compile(f"orig-{tag}"))
    data.fill(json.dumps({"who": f"edited-{tag}"}))
    page.get_by_role("button", name="Send event").click()
    expect(page.get_by_role("status").first).to_contain_text("Event ui/greet sent")
    new_id = re.search(r"id (\w+)", page.get_by_role("status").first.inner_text())
    assert new_id is not None and new_id.group(1) != event_id
    replayed = server.get(f"/v1/events/{new_id.group(1)}")["data"]
    assert replayed["data"] == {"who": f"edited-{tag}"}


def test_the_send_form_keeps_its_last_payload(page: Page, server: Server) -> None:
    payload = json.dumps({"who": f"kept-{_tag()}"})
    page.goto(server.url + "/events")
    page.get_by_label("Event name").fill("ui/greet")
    page.get_by_label("Data (a JSON object)").fill(payload)
    page.get_by_role("button", name="Send event").click()
    expect(page.get_by_role("status").first).to_contain_text("sent")
    page.goto(server.url + "/events")
    expect(page.get_by_label("Event name")).to_have_value("ui/greet")
    expect(page.get_by_label("Data (a JSON object)")).to_have_value(payload)


def test_cancel_asks_first(page: Page, server: Server) -> None:
    run_id = server.run_of(server.send("ui/nap", {"n": _tag()}))
    page.goto(f"{server.url}/runs/{run_id}")
    expect(page.locator(".waiting")).to_contain_text("sleeping", timeout=20_000)
    asked: list[str] = []
    page.once("dialog", lambda d: (asked.append(d.message), d.dismiss()))
    page.get_by_role("button", name="Cancel run").click()
    page.wait_for_timeout(300)
    assert asked and run_id in asked[0]
    assert _run(server, run_id)["status"] != "Cancelled"
    page.once("dialog", lambda d: d.accept())
    page.get_by_role("button", name="Cancel run").click()
    expect(page.locator("#run h1")).to_contain_text("Cancelled")


def test_cancel_without_javascript_gets_a_confirmation_page(
    browser: Browser, server: Server
) -> None:
    run_id = server.run_of(server.send("ui/nap", {"n": _tag()}))
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    try:
        page.goto(f"{server.url}/runs/{run_id}")
        page.get_by_role("button", name="Cancel run").click()
        expect(page.locator("h1")).to_have_text(f"Cancel run {run_id}?")
        assert _run(server, run_id)["status"] != "Cancelled"
        page.get_by_role("button", name="Yes, go ahead").click()
        expect(page.locator("#run h1")).to_contain_text("Cancelled")
    finally:
        context.close()


def test_bulk_cancel_by_filter_with_a_count_first(page: Page, server: Server) -> None:
    runs = [server.run_of(server.send("ui/nap", {"n": _tag()})) for _ in range(3)]
    for run_id in runs:
        until(lambda r=run_id: _run(server, r)["status"] == "Running", "the nap to sleep")
    page.goto(f"{server.url}/runs?function=ui-test-nap&status=RUNNING")
    count = page.locator("#bulk-count")
    expect(count).to_contain_text("active run")
    matched = int(count.inner_text().split()[0])
    assert matched >= 3
    page.once("dialog", lambda d: d.accept())
    page.get_by_role("button", name=re.compile(r"Cancel \d+ matching run")).click()
    expect(page.get_by_role("status").first).to_contain_text(f"Cancelled {matched} run")
    for run_id in runs:
        assert _run(server, run_id)["status"] == "Cancelled"
    expect(page.locator("#bulk-count")).to_have_count(0)


def test_change_an_apps_url_and_delete_it(page: Page, server: Server) -> None:
    page.goto(server.url + "/apps")
    card = page.locator("article", has_text="ui-test")
    url = card.locator("p.mono").inner_text()
    card.locator("summary", has_text="Change its URL").click()
    card.get_by_label("New serve URL").fill("http://127.0.0.1:9/api/inngest")
    card.get_by_role("button", name="Sync from the new URL").click()
    expect(page.locator(".note.bad")).to_contain_text("was not changed")
    page.once("dialog", lambda d: d.accept())
    page.locator("article", has_text="ui-test").get_by_role("button", name="Delete app").click()
    expect(page.get_by_role("status").first).to_contain_text("Deleted the app ui-test")
    expect(page.locator("article", has_text="ui-test")).to_have_count(0)
    page.goto(server.url + "/functions")
    expect(page.locator("#functions-body")).to_have_count(0)
    page.goto(server.url + "/apps")  # bring it back for the other tests
    page.get_by_label("Serve URL", exact=True).fill(url)
    page.get_by_role("button", name="Sync", exact=True).click()
    expect(page.locator("article", has_text="ui-test")).to_contain_text("Synced")
    page.goto(server.url + "/functions")
    expect(page.locator("#functions-body > tr")).to_have_count(FUNCTIONS)


# -- 7. lists ----------------------------------------------------------------------------------
def test_runs_list_filters_searches_and_explains(page: Page, server: Server) -> None:
    tag = _tag()
    done = server.run_of(server.send("ui/greet", {"who": f"find-{tag}"}))
    failed = server.run_of(server.send("ui/fail", {"n": tag}))
    _ended(server, done), _ended(server, failed)
    server.run_of(server.send("ui/throttled", {"n": tag}))
    waiting_event = server.send("ui/throttled", {"n": tag + "b"})
    waiting = server.run_of(waiting_event)

    page.goto(server.url + "/runs")
    page.get_by_role("checkbox", name="Completed").check()
    page.get_by_role("checkbox", name="Failed", exact=True).check()
    submit(page, page.get_by_role("button", name="Apply filters"))
    statuses = set(page.locator("#runs-body tr td:first-child").all_inner_texts())
    assert statuses and statuses <= {"Completed", "Failed"}, statuses
    expect(page.locator(f"tr[data-id='{done}']")).to_be_visible()
    expect(page.locator(f"tr[data-id='{failed}']")).to_be_visible()

    for query, run_id in (
        (f"hello find-{tag}", done),
        (waiting, waiting),
        (waiting_event, waiting),
    ):
        page.goto(server.url + "/runs")
        page.get_by_label("Search").fill(query)
        submit(page, page.get_by_label("Search"), press="Enter")
        ids = page.locator("#runs-body tr[data-id]").evaluate_all("rs => rs.map(r => r.dataset.id)")
        assert ids == [run_id], (query, ids)

    row = page.locator(f"tr[data-id='{waiting}']")
    expect(row.locator("td.why")).to_contain_text("throttle")
    expect(row).to_contain_text("ui-test")  # the app column
    queued = row.locator("time")
    expect(queued.first).to_have_text(re.compile(r"ago|just now"))
    expect(queued.first).to_have_attribute("title", re.compile(r"^\d{4}-\d\d-\d\d .* UTC$"))
    screenshot(page, "runs-search")


def test_events_hide_weirs_own_by_default_and_filter_by_prefix(page: Page, server: Server) -> None:
    _ended(server, server.run_of(server.send("ui/greet", {"who": _tag()})))
    page.goto(server.url + "/events")
    names = page.locator("#events-list .event-name").all_inner_texts()
    assert names and not any(n.startswith("inngest/") for n in names)
    page.get_by_label("Show Weir's own events").check()
    page.get_by_role("button", name="Filter").click()
    expect(
        page.locator("#events-list .event-name", has_text="inngest/function.finished").first
    ).to_be_visible()
    page.goto(server.url + "/events")
    page.get_by_label("Name starts with").fill("ui/gr")
    submit(page, page.get_by_role("button", name="Filter"))
    names = page.locator("#events-list .event-name").all_inner_texts()
    assert names and set(names) == {"ui/greet"}


def test_functions_table_searches_and_shows_detail_on_demand(page: Page, server: Server) -> None:
    page.goto(server.url + "/functions")
    rows = page.locator("#functions-body > tr")
    assert rows.count() == FUNCTIONS
    page.get_by_label("Search functions").fill("throttled")
    expect(page.locator("#functions-body > tr:visible")).to_have_count(1)
    row = page.locator("#functions-body > tr:visible")
    details = row.locator("details")
    expect(details.locator("li").first).to_be_hidden()
    details.locator("summary").click()
    expect(details).to_contain_text("throttle: 1 at once")
    page.goto(server.url + "/functions?q=nap")  # the same search without JavaScript
    expect(page.locator("#functions-body > tr")).to_have_count(1)


# -- 8. looks and keys -------------------------------------------------------------------------
def test_dark_mode_follows_the_system(page: Page, server: Server) -> None:
    server.run_of(server.send("ui/throttled", {"n": _tag()}))
    page.goto(server.url + "/runs")
    light = page.evaluate("getComputedStyle(document.documentElement).backgroundColor")
    page.emulate_media(color_scheme="dark")
    page.goto(server.url + "/runs")
    dark = page.evaluate("getComputedStyle(document.documentElement).backgroundColor")
    channels = [int(c) for c in re.findall(r"\d+", dark)[:3]]
    assert dark != light and max(channels) < 60, dark
    ink = page.evaluate("getComputedStyle(document.querySelector('h1')).color")
    assert min(int(c) for c in re.findall(r"\d+", ink)[:3]) > 180, ink
    screenshot(page, "runs-dark")


def test_main_pages_fit_a_phone(browser: Browser, server: Server) -> None:
    run_id = server.run_of(server.send("ui/greet", {"who": _tag()}))
    _ended(server, run_id)
    context = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
    page = context.new_page()
    try:
        paths = ["/runs", "/events", "/functions", "/apps", f"/runs/{run_id}"]
        for path in [*paths, "/functions/ui-test-limited"]:
            page.goto(server.url + path)
            width = page.evaluate("document.documentElement.scrollWidth")
            assert width <= PHONE["width"], f"{path} is {width}px wide"
        submit(page, page.get_by_role("button", name="Simulate"))
        expect(page.locator("#pg-summary")).to_be_visible()
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= PHONE["width"], f"the playground's result is {width}px wide"
        page.goto(server.url + "/runs")
        screenshot(page, "runs-phone")
    finally:
        context.close()


def test_keyboard_slash_searches_and_j_k_walk_the_list(page: Page, server: Server) -> None:
    for _ in range(2):
        server.run_of(server.send("ui/greet", {"who": _tag()}))
    page.goto(server.url + "/runs")
    page.locator("h1").click()
    page.keyboard.press("/")
    expect(page.get_by_label("Search")).to_be_focused()
    page.locator("h1").click()
    page.keyboard.press("j")
    first = page.locator("#runs-body tr").nth(0)
    expect(first).to_have_class(re.compile("nav-current"))
    expect(first.locator("a")).to_be_focused()
    page.keyboard.press("j")
    expect(page.locator("#runs-body tr").nth(1).locator("a")).to_be_focused()
    page.keyboard.press("k")
    expect(first.locator("a")).to_be_focused()
    outline = page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
    assert outline == "solid"  # the focused link shows it
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(r"/runs/\w+$"))


# -- 9. the flow-control playground ------------------------------------------------------------
def test_playground_shows_what_the_gates_do(page: Page, server: Server) -> None:
    page.goto(server.url + "/functions/ui-test-limited")
    page.get_by_label("Events").fill('0 {"n": 1}\n200 {"n": 2}\n400 {"n": 3}\n')
    page.get_by_role("button", name="Simulate").click()
    expect(page.locator("#pg-summary")).to_contain_text("3 events → 1 run (1 started), 2 skipped")
    skipped = page.locator("#pg-events-table tr.f-skipped")
    expect(skipped).to_have_count(2)
    expect(skipped.first).to_contain_text("rate_limit: over 1 per 3600000 ms")
    expect(page.locator("#pg-timeline .tick")).to_have_count(3)
    screenshot(page, "playground")

    page.goto(server.url + "/functions/ui-test-slow-lane")
    page.get_by_label("Events").fill("0 {}\n1000 {}\n")
    page.get_by_role("button", name="Simulate").click()
    expect(page.locator("#pg-summary")).to_contain_text("2 runs (2 started)")
    expect(page.locator("#pg-timeline")).to_contain_text("throttle: waiting for a slot")

    page.get_by_label("Events").fill("soon {}")
    page.get_by_role("button", name="Simulate").click()
    expect(page.locator("#pg-error")).to_contain_text("line 1: start with the time in ms")


def test_playground_replays_recorded_events(page: Page, server: Server) -> None:
    """The recorded ui/limited events (all within its hour), played back: one run, the rest
    skipped, as the platform did with them."""
    for _ in range(3):
        server.send("ui/limited", {"n": _tag()})
    page.goto(server.url + "/functions/ui-test-limited")
    submit(page, page.get_by_role("link", name="Load recorded events"))
    lines = page.get_by_label("Events").input_value().strip().splitlines()
    assert len(lines) >= 3 and lines[0].startswith("0 ")
    submit(page, page.get_by_role("button", name="Simulate"))
    fates = page.locator("#pg-events-table tbody td:nth-child(3)").all_inner_texts()
    assert fates[0] == "started" and set(fates[1:]) == {"skipped"}
