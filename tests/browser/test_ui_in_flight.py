"""A run whose call is in the app, as the pages show it (issue 36, items 1 and 2), in headless
Chromium against a real Weir server and a real SDK app whose calls stay in the app until the
test creates their release file: the run is Running with its start from the moment its first
call is handed over, on its page, in the list and under the list's Status filter; and each
call in the app is a row of the run's timeline, named by its step once Weir knows it."""

import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Locator, Page, expect
from weir.web.display import clock

from tests.browser.browser_support import Server, screenshot, submit, until

pytestmark = pytest.mark.browser
CLOCK = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} UTC$")  # web/display.clock


@pytest.fixture
def release(tmp_path: Path) -> Iterator[Path]:
    """The file that lets the app's held calls answer: created at the end whatever happens,
    so no call outlives its test."""
    path = tmp_path / f"release-{uuid.uuid4().hex[:8]}"
    yield path
    path.touch()


def _run(server: Server, run_id: str) -> dict[str, Any]:
    data: dict[str, Any] = server.get(f"/v1/runs/{run_id}")["data"]
    return data


def _in_flight(server: Server, run_id: str) -> list[dict[str, Any]]:
    history = _run(server, run_id)["history"]
    return [h for h in history if h["kind"] == "call" and h["ended_at"] is None]


def _held(server: Server, release: Path, **data: Any) -> str:
    return server.run_of(server.send("ui/held", {"release": str(release), **data}))


def _completed(server: Server, release: Path, run_id: str) -> None:
    release.touch()
    until(lambda: _run(server, run_id)["status"] == "Completed", "the released run to complete")


def _fact(page: Page, name: str) -> Locator:
    return page.locator("#run-facts").locator(f"xpath=./dt[.='{name}']/following-sibling::dd[1]")


def test_a_run_whose_first_call_is_in_the_app_is_running_on_its_page_and_in_the_list(
    page: Page, server: Server, release: Path
) -> None:
    run_id = _held(server, release)
    # what said so before too: the state is executing, its first call is in the app
    until(lambda: _run(server, run_id)["state"]["kind"] == "executing", "the call in the app")

    page.goto(f"{server.url}/runs/{run_id}")
    expect(page.locator("#run h1 .badge")).to_have_text("Running")
    expect(_fact(page, "Started")).to_have_text(CLOCK)  # not "not yet"
    expect(_fact(page, "Ended")).to_have_text("not yet")
    expect(page.locator("#run-state")).to_contain_text("What is this run doing?")

    page.goto(f"{server.url}/runs?function=ui-test-held")
    row = page.locator(f"tr[data-id='{run_id}']")
    expect(row.locator("td").first).to_have_text("Running")
    expect(row.locator("td:nth-child(8) time")).to_have_count(1)  # its start, in Started

    page.get_by_role("checkbox", name="Running", exact=True).check()
    submit(page, page.get_by_role("button", name="Apply filters"))
    expect(page).to_have_url(re.compile(r"function=ui-test-held&status=RUNNING"))
    expect(page.locator(f"tr[data-id='{run_id}']")).to_have_count(1)
    expect(page.locator("#bulk-count")).to_have_text("1 active run match these filters.")

    page.get_by_role("checkbox", name="Running", exact=True).uncheck()
    page.get_by_role("checkbox", name="Queued", exact=True).check()
    submit(page, page.get_by_role("button", name="Apply filters"))
    expect(page).to_have_url(re.compile(r"function=ui-test-held&status=QUEUED"))
    expect(page.locator("#runs-body")).to_contain_text("No runs match these filters")
    expect(page.locator(f"tr[data-id='{run_id}']")).to_have_count(0)
    expect(page.locator("#bulk-count")).to_have_count(0)  # nothing to cancel as queued
    _completed(server, release, run_id)


def _call_rows(page: Page) -> Locator:
    return page.locator("#waterfall li.k-call")


def test_a_later_step_in_the_app_is_a_timeline_row_finding_its_next_step(
    page: Page, server: Server, release: Path
) -> None:
    run_id = _held(server, release, after="step")
    # the quick step is saved and the call after it is in the app
    until(lambda: _run(server, run_id)["steps"] and _in_flight(server, run_id), "the later call")
    [call] = _in_flight(server, run_id)

    page.goto(f"{server.url}/runs/{run_id}")
    expect(page.locator("#run-state")).to_contain_text(
        "executing the function, finding its next step, attempt 1 of 1, since "
    )
    rows = _call_rows(page)
    expect(rows).to_have_count(2)  # the quick step's call, answered, and the one in the app
    expect(rows.nth(0).locator(".bar-meta .badge")).to_have_text("Completed")
    later = rows.nth(1)
    expect(later.locator(".bar-name")).to_have_text("Call · finding its next step")
    expect(later.locator(".bar-meta .badge")).to_have_text("Running")
    meta = later.locator(".bar-meta")
    expect(meta).to_contain_text("so far · in the app, after step quick")
    # the badge, then when the call was handed to the app
    expect(meta).to_contain_text(f"Running {clock(call['started_at'])} · ")
    screenshot(page, "run-in-flight")

    _completed(server, release, run_id)
    page.reload()
    expect(page.locator("#run h1 .badge")).to_have_text("Completed")
    expect(page.locator("#waterfall")).not_to_contain_text("so far")
    expect(page.locator("#waterfall")).not_to_contain_text("finding")
    labels = _call_rows(page).locator(".bar-name").all_inner_texts()
    assert labels[:2] == ["Call · quick · attempt 1", "Call · second · attempt 1"], labels


def test_planned_steps_in_the_app_are_timeline_rows_with_their_names(
    page: Page, server: Server, release: Path
) -> None:
    run_id = _held(server, release, after="parallel")
    until(lambda: len(_in_flight(server, run_id)) == 2, "both planned calls in the app")

    page.goto(f"{server.url}/runs/{run_id}")
    for name in ("left", "right"):
        row = page.locator("#waterfall li.k-call", has_text=f"Call · {name} · attempt 1")
        expect(row).to_have_count(1)
        expect(row.locator(".bar-meta .badge")).to_have_text("Running")
        expect(row.locator(".bar-meta")).to_contain_text("so far · in the app")

    _completed(server, release, run_id)
    page.reload()
    expect(page.locator("#waterfall")).not_to_contain_text("so far")
    for name in ("left", "right"):  # its answer's row in its place, not beside it
        row = page.locator("#waterfall li.k-call", has_text=f"Call · {name} · attempt 1")
        expect(row).to_have_count(1)
        expect(row.locator(".bar-meta .badge")).to_have_text("Completed")
