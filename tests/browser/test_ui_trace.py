"""The run page's trace (issue 37): the span tree as a waterfall, each span's panel with its
attributes and error, in Chromium; and the same tree as a plain nested list without
JavaScript."""

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser.browser_support import Server, screenshot, until

pytestmark = pytest.mark.browser


def _finished(server: Server, run_id: str) -> bool:
    return bool(server.get(f"/v1/runs/{run_id}")["data"]["status"] == "Completed")


def test_the_trace_nests_calls_under_the_run_and_steps_under_calls(
    page: Page, server: Server
) -> None:
    run_id = server.run_of(server.send("ui/flaky", {}))
    until(lambda: _finished(server, run_id), "the flaky run to complete")
    page.goto(f"{server.url}/runs/{run_id}")
    rows = page.locator("#trace li.span-row")
    expect(rows.first).to_have_attribute("data-depth", "0")
    expect(rows.first.locator(".bar-name")).to_contain_text("flaky")
    root = rows.first.get_attribute("data-span")
    calls = page.locator("#trace li.k-call")
    expect(calls).to_have_count(4)  # two declined attempts, the third, the return
    for i in range(4):
        expect(calls.nth(i)).to_have_attribute("data-parent", str(root))
        expect(calls.nth(i)).to_have_attribute("data-depth", "1")
    call_ids = {calls.nth(i).get_attribute("data-span") for i in range(4)}
    steps = page.locator("#trace li.k-step")
    expect(steps).to_have_count(3)
    for i in range(3):
        assert steps.nth(i).get_attribute("data-parent") in call_ids
        expect(steps.nth(i)).to_have_attribute("data-depth", "2")
    expect(page.locator("#trace li.k-backoff")).to_have_count(2)
    # the run span's panel (the picture shows no stack: a stack names the machine's paths)
    rows.first.locator("summary").click()
    expect(rows.first.locator(".span-attrs")).to_contain_text("weir.function.slug")
    screenshot(page, "run-trace")
    rows.first.locator("summary").click()
    # a failed attempt's panel: its error, its stack and its attributes
    failed = page.locator("#trace li.k-step", has=page.locator(".s-error")).first
    failed.locator("summary").click()
    expect(failed.locator(".error-message")).to_have_text("card declined on attempt 1")
    expect(failed.locator(".error-name")).to_have_text("ValueError")
    expect(failed.locator(".span-attrs")).to_contain_text("weir.step.attempt")
    # its stack, shown once on the page: the span points to the box that shows it
    ref = failed.locator(".stack-ref a")
    expect(ref).to_have_count(1)
    target = ref.get_attribute("href")
    assert target is not None and target.startswith("#")
    expect(page.locator(f"pre.stack{target}")).to_contain_text("ValueError")


def test_without_javascript_the_trace_is_a_plain_nested_list(
    browser: Browser, server: Server
) -> None:
    run_id = server.run_of(server.send("ui/flaky", {}))
    until(lambda: _finished(server, run_id), "the flaky run to complete")
    context = browser.new_context(java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto(f"{server.url}/runs/{run_id}")
        rows = page.locator("#trace li.span-row")
        expect(rows.first).to_be_visible()
        assert rows.count() >= 8
        step = page.locator("#trace li.k-step").first
        step.locator("summary").click()  # a <details>: opens without a script
        expect(step.locator(".span-attrs")).to_be_visible()
    finally:
        context.close()
