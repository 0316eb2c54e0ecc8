"""A CEL query in the runs page's Query box, in real Chromium against `weir dev` serving a
store seeded with more runs than one query page examines: the matches, newest first, the note
saying how far it looked with "Search older runs" going on from there until every run was
examined, and a bad query refused on the page with the checker's words."""

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect
from weir.platform.reads.query import QUERY_WINDOW
from weir.platform.store.database import make_engine
from weir.platform.store.migrate import upgrade

from tests.browser.browser_support import Server, free_port, screenshot, spawn, stop, submit, until
from tests.support.seeded_runs import Seeded, runs_with_events

T0 = 1_767_268_800_000
RUNS = QUERY_WINDOW + 4
WANTED = (0, 2, RUNS - 1)  # customer c-42's runs: two lie beyond the first window


def _seed(db: Path) -> list[str]:
    engine = make_engine(f"sqlite:///{db}")
    upgrade(engine)
    seeded = [
        Seeded("COMPLETED", {"total": 200 + i}, {"customer_id": "c-42" if i in WANTED else "c-1"})
        for i in range(RUNS)
    ]
    try:
        return runs_with_events(engine, seeded, T0)
    finally:
        engine.dispose()


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, list[str]]]:
    home = tmp_path_factory.mktemp("weir-query")
    ids = _seed(home / "weir.db")
    port = free_port()
    args = [sys.executable, "-m", "weir", "dev", "--port", str(port)]
    weir = spawn([*args, "--database-url", f"sqlite:///{home}/weir.db"], home / "weir.log")
    try:
        served = Server(f"http://127.0.0.1:{port}")
        until(lambda: served.get("/health"), "Weir to answer /health")
        yield served, ids
    finally:
        stop(weir)


def _shown(page: Page) -> list[str]:
    ids: list[str] = page.locator("#runs-body tr[data-id]").evaluate_all(
        "rs => rs.map(r => r.dataset.id)"
    )
    return ids


def test_a_query_finds_its_runs_window_by_window(
    page: Page, seeded: tuple[Server, list[str]]
) -> None:
    server, ids = seeded
    page.goto(server.url + "/runs")
    box = page.get_by_label("Query (CEL)")
    box.fill("event.data.customer_id == 'c-42' && output.total > 100")
    submit(page, box, press="Enter")
    found = _shown(page)
    assert found == [ids[RUNS - 1]]  # the first page examined (at most) the newest window
    note = page.locator("#search-window")
    expect(note).to_contain_text("This query looked at")
    expect(note).to_contain_text("older runs were not searched yet")
    screenshot(page, "runs-query")
    for _ in range(RUNS):  # each page examines at least one chunk: bounded
        if page.locator("#search-further").count() == 0:
            break
        submit(page, page.get_by_role("link", name="Search older runs"))
        found += _shown(page)
    assert found == [ids[i] for i in sorted(WANTED, reverse=True)]
    expect(page.get_by_label("Query (CEL)")).to_have_value(
        "event.data.customer_id == 'c-42' && output.total > 100"
    )


def test_a_bad_query_is_refused_on_the_page(page: Page, seeded: tuple[Server, list[str]]) -> None:
    server, _ = seeded
    page.goto(server.url + "/runs")
    box = page.get_by_label("Query (CEL)")
    box.fill("output.total >")
    submit(page, box, press="Enter")
    expect(page.locator("#query-error")).to_contain_text("This query is not valid: syntax error")
    expect(page.locator("#runs-body tr.empty")).to_have_text("Fix the query above to search.")
    box = page.get_by_label("Query (CEL)")
    box.fill("customer == 'c-42'")
    submit(page, box, press="Enter")
    expect(page.locator("#query-error")).to_contain_text("unknown identifier `customer`")


def test_the_events_page_takes_a_query_too(page: Page, seeded: tuple[Server, list[str]]) -> None:
    server, _ = seeded
    page.goto(server.url + "/events")
    box = page.get_by_label("Query (CEL)")
    box.fill("event.data.customer_id == 'c-42'")
    submit(page, box, press="Enter")
    payloads = page.locator("#events-list li.event pre.json")
    found = [payloads.nth(i).text_content() or "" for i in range(payloads.count())]
    for _ in range(RUNS):  # bounded: each page examines at least one event
        if page.locator("#search-further").count() == 0:
            break
        expect(page.locator("#search-window")).to_contain_text("This query looked at")
        submit(page, page.get_by_role("link", name="Search older events"))
        found += [payloads.nth(i).text_content() or "" for i in range(payloads.count())]
    assert len(found) == len(WANTED)
    for text, i in zip(found, sorted(WANTED, reverse=True), strict=True):
        assert f'"e-{i}"' in text, (i, text)
    box = page.get_by_label("Query (CEL)")
    box.fill("status == 'FAILED'")
    submit(page, box, press="Enter")
    expect(page.locator("#ev-query-error")).to_contain_text("unknown identifier `status`")
