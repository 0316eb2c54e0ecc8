"""Issue 36 item 9, in headless Chromium against a real Weir and a real SDK app: an event's
badges say what is true now, an empty filter says it matched nothing, and a step is named by
its name (not its hash) in "Invoked by" and in the rerun-from-step message."""

import uuid
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.browser.browser_support import Server, until

pytestmark = pytest.mark.browser


def _run(server: Server, run_id: str) -> dict[str, Any]:
    data: dict[str, Any] = server.get(f"/v1/runs/{run_id}")["data"]
    return data


def test_a_batched_event_whose_batch_ran_is_no_longer_waiting_in_a_batch(
    page: Page, server: Server
) -> None:
    tag = uuid.uuid4().hex[:8]
    first, second = server.send_all([("ui/batch", {"t": tag}), ("ui/batch", {"t": tag})])
    batch_run = server.run_of(second)
    until(lambda: _run(server, batch_run)["status"] == "Completed", "the batch run")
    page.goto(f"{server.url}/events?name=ui/batch")
    for event_id in (first, second):
        badges = page.locator(f"li.event[data-id='{event_id}'] .event-runs .badge")
        expect(badges).to_have_text(["Completed"])  # not "Completed · Waiting in a batch"


def test_a_filter_that_matches_no_event_says_so(page: Page, server: Server) -> None:
    server.send("ui/greet", {})  # the stream is not empty
    name = f"ui/nothing-{uuid.uuid4().hex[:8]}"
    page.goto(f"{server.url}/events?name={name}")
    empty = page.locator("#events-list li.empty")
    expect(empty).to_contain_text(f"No event whose name starts with {name}")
    expect(empty).not_to_contain_text("No events yet")


def test_an_invoked_run_names_the_step_that_invoked_it(page: Page, server: Server) -> None:
    parent = server.run_of(server.send("ui/parent", {}))
    until(lambda: _run(server, parent)["status"] == "Completed", "the parent")
    [step] = _run(server, parent)["steps"]
    child = _run(server, parent)["links"]["children"][step["id"]]
    page.goto(f"{server.url}/runs/{child}")
    invoked_by = page.locator("#run-facts dd", has=page.locator("#link-parent"))
    expect(invoked_by).to_contain_text("(step ask-child)")
    expect(invoked_by).not_to_contain_text(step["id"])


def test_the_rerun_from_step_message_names_the_step(page: Page, server: Server) -> None:
    run_id = server.run_of(server.send("ui/greet", {"who": "hopper"}))
    until(lambda: _run(server, run_id)["status"] == "Completed", "the greet run")
    step_id = next(s["id"] for s in _run(server, run_id)["steps"] if s["name"] == "compose")
    page.goto(f"{server.url}/runs/{run_id}")
    page.get_by_label("From step").select_option(label="compose")
    page.get_by_role("button", name="Rerun from this step").click()
    status = page.get_by_role("status").first
    expect(status).to_contain_text("keeping the steps before compose")
    expect(status).not_to_contain_text(step_id)


def test_rerun_from_a_step_with_a_new_input_from_the_run_page(page: Page, server: Server) -> None:
    # issue 36 item 12: the step's new arguments, typed into the run page
    run_id = server.run_of(server.send("ui/shout", {"word": "hello"}))
    until(lambda: _run(server, run_id)["status"] == "Completed", "the shout run")
    page.goto(f"{server.url}/runs/{run_id}")
    page.get_by_label("From step").select_option(label="loud")
    page.get_by_label("New input for that step (optional)").fill('["grace"]')
    page.get_by_role("button", name="Rerun from this step").click()
    expect(page.get_by_role("status").first).to_contain_text("giving loud a new input")
    expect(page.locator("#run h1")).to_contain_text("Completed", timeout=20_000)
    expect(page.locator("#run-output")).to_contain_text('"GRACE"')

    page.goto(f"{server.url}/runs/{run_id}")
    page.get_by_label("From step").select_option(label="loud")
    page.get_by_label("New input for that step (optional)").fill('{"not": "an array"}')
    page.get_by_role("button", name="Rerun from this step").click()
    expect(page.locator("main")).to_contain_text("must be a JSON array")
