"""A text search of a store with more runs than one search examines: the runs page says how
far back it looked and its "Search older runs" link goes on from there, in real Chromium
against `weir dev` serving a store seeded with SEARCH_WINDOW + 4 finished runs."""

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect
from weir.platform.store.database import make_engine
from weir.platform.store.migrate import upgrade
from weir.platform.store.views.queries import SEARCH_WINDOW

from tests.browser.browser_support import Server, free_port, screenshot, spawn, stop, submit, until
from tests.support.seeded_runs import finished_runs

T0 = 1_767_268_800_000  # the oldest run; each next one 1 s later
RUNS = SEARCH_WINDOW + 4
NEEDLES = (0, 2, RUNS - 1)  # the two oldest matches lie beyond the first window


def _seed(db: Path) -> list[str]:
    engine = make_engine(f"sqlite:///{db}")
    upgrade(engine)
    outputs = [f"needle {i}" if i in NEEDLES else "hay" for i in range(RUNS)]
    try:
        return finished_runs(engine, outputs, T0)
    finally:
        engine.dispose()


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, list[str]]]:
    home = tmp_path_factory.mktemp("weir-search")
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


def test_a_search_says_how_far_it_looked_and_searches_older_runs(
    page: Page, seeded: tuple[Server, list[str]]
) -> None:
    server, ids = seeded
    page.goto(server.url + "/runs")
    page.get_by_label("Search").fill("needle")
    submit(page, page.get_by_label("Search"), press="Enter")
    assert _shown(page) == [ids[RUNS - 1]]
    note = page.locator("#search-window")
    expect(note).to_contain_text(f"looked at {SEARCH_WINDOW:,} runs")
    expect(note).to_contain_text("older runs were not searched yet")
    # the window ends at the SEARCH_WINDOW-th newest run, i.e. run 4
    expect(note.locator("time")).to_have_attribute("datetime", "2026-01-01T12:00:04.000+00:00")
    screenshot(page, "runs-search-window")
    submit(page, page.get_by_role("link", name="Search older runs"))
    assert _shown(page) == [ids[2], ids[0]]
    expect(page.locator("#search-window")).to_have_count(0)  # nothing older is left
    expect(page.get_by_label("Search")).to_have_value("needle")


def test_a_search_with_no_match_in_its_window_says_so(
    page: Page, seeded: tuple[Server, list[str]]
) -> None:
    server, _ = seeded
    page.goto(server.url + "/runs?search=nothing-says-this")
    expect(page.locator("#runs-body tr.empty")).to_have_text("No run among those searched matches.")
    expect(page.get_by_role("link", name="Search older runs")).to_be_visible()
