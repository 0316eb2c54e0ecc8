"""Keyset paging of the runs list (no browser): pages meet exactly, ties on created_at too."""

import json
from dataclasses import replace
from pathlib import Path

from sqlalchemy import Engine, insert
from weir.platform.store.database import make_engine
from weir.platform.store.engine.schema import runs
from weir.platform.store.migrate import upgrade
from weir.platform.store.views import queries

T0 = 1_700_000_000_000


def _store(tmp_path: Path, count: int) -> Engine:
    engine = make_engine(f"sqlite:///{tmp_path}/paging.db")
    upgrade(engine)
    rows = [
        {
            "id": f"R{i:05d}",
            "function_id": f"fn{i % 3}",
            "status": "FAILED" if i % 4 == 0 else "COMPLETED",
            "event_ids": json.dumps([]),
            "created_at": T0 + (i // 3) * 10,  # three runs share each timestamp
            "score": T0,
            "lane": "x",
        }
        for i in range(count)
    ]
    with engine.begin() as conn:
        conn.execute(insert(runs), rows)
    return engine


def _all_pages(engine: Engine, wanted: queries.RunPage) -> list[str]:
    seen: list[str] = []
    page = replace(wanted, limit=7)
    with engine.connect() as conn:
        while True:
            rows = queries.list_runs(conn, page)
            seen += [r.id for r in rows]
            if len(rows) < page.limit:
                return seen
            page = replace(page, before=(rows[-1].created_at, rows[-1].id))


def test_pages_cover_every_run_once_newest_first(tmp_path: Path) -> None:
    engine = _store(tmp_path, 100)
    expected = sorted((f"R{i:05d}" for i in range(100)), key=lambda r: (int(r[1:]) // 3, r))
    assert _all_pages(engine, queries.RunPage()) == expected[::-1]


def test_filters_page_the_same_way(tmp_path: Path) -> None:
    engine = _store(tmp_path, 100)
    failed_fn0 = [f"R{i:05d}" for i in range(100) if i % 4 == 0 and i % 3 == 0]
    got = _all_pages(engine, queries.RunPage(statuses=("FAILED",), function_id="fn0"))
    assert got == failed_fn0[::-1]


def test_polling_after_a_cursor_returns_only_newer_runs(tmp_path: Path) -> None:
    engine = _store(tmp_path, 30)
    with engine.connect() as conn:
        newer = queries.list_runs(conn, queries.RunPage(after=(T0 + 80, "R00025")))
    assert [r.id for r in newer] == ["R00029", "R00028", "R00027", "R00026"]
