"""CEL queries over the runs list at scale (issue 38: each page under 1 s at 1,000,000 runs).

A fresh SQLite file, migrated by Weir, gets N finished runs and their triggering events written
straight into the tables in bulk (the write path is not what this measures): one run each
10 ms, 90 % completed, 8 % failed, 2 % cancelled, a customer id in each event's data out of
10,000 (so `c-42` has about one run in 10,000) and a total in each completed run's output.

Then each query is timed as a REST page runs it (`weir.platform.reads.query`, in process,
inside one read transaction, without the HTTP around it): the first page (no cursor) and a
"search older" page (from the cursor the first page answered; when the first page was full or
examined every run, from the middle of the store), median of `--rounds`. Figures depend on
the machine's load: record `uptime` beside them.

    .venv/bin/python bench/bench_query.py                   # 1,000,000 runs
    .venv/bin/python bench/bench_query.py --runs 20000      # a quick check
"""

import argparse
import json
import os
import random
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

from sqlalchemy import Engine
from weir.platform.foundation.ids import new_id
from weir.platform.reads.query import QUERY_WINDOW, QueryPage, query_runs
from weir.platform.reads.query_fields import RUN_FIELDS, FunctionNames, compile_query
from weir.platform.store.database import make_engine
from weir.platform.store.migrate import upgrade
from weir.platform.store.views.queries import RunPage

START_MS = 1_767_268_800_000  # 2026-01-01T12:00:00Z
STEP_MS = 10
STATUSES = ["COMPLETED"] * 90 + ["FAILED"] * 8 + ["CANCELLED"] * 2
CUSTOMERS = 10_000
CHUNK = 50_000
QUERIES = {
    "selective": "event.data.customer_id == 'c-42' && output.total > 100",
    "unselective": "status == 'COMPLETED'",
    # a required status: the scan walks the (status, created_at) index, failed runs only
    "failed, selective": "status == 'FAILED' && event.data.customer_id == 'c-42'",
}


def seed(db: Path, n: int) -> None:
    upgrade(make_engine(f"sqlite:///{db}"))
    rng = random.Random(7)
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA synchronous=OFF")
    conn.execute("PRAGMA journal_mode=WAL")
    for start in range(0, n, CHUNK):
        run_rows, event_rows = [], []
        for i in range(start, min(n, start + CHUNK)):
            at = START_MS + i * STEP_MS
            event_id, run_id = new_id(at), new_id(at)
            status = rng.choice(STATUSES)
            customer = f"c-{rng.randrange(CUSTOMERS)}"
            data = {"customer_id": customer, "items": rng.randrange(1, 9)}
            payload = {"name": "shop/order.placed", "data": data, "id": event_id, "ts": at}
            event_rows.append((event_id, "shop/order.placed", None, at, at, json.dumps(payload)))
            if status == "COMPLETED":
                output: object = {"total": rng.randrange(1, 1000), "items": data["items"]}
            elif status == "FAILED":
                output = {"name": "Error", "message": "partner API down"}
            else:
                output = None
            run_rows.append(
                (run_id, "fn-orders", status, json.dumps([event_id]), at, at, at + 5,
                 json.dumps(output), at, "orders")
            )  # fmt: skip
        conn.executemany(
            "INSERT INTO events (id, name, user_id, ts, received_at, payload)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            event_rows,
        )
        conn.executemany(
            "INSERT INTO runs (id, function_id, status, event_ids, created_at, started_at,"
            " ended_at, output, score, lane) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            run_rows,
        )
        conn.commit()
    conn.execute("ANALYZE")
    conn.commit()
    conn.close()


def timed(engine: Engine, source: str, page: RunPage, rounds: int) -> tuple[float, QueryPage]:
    expression = compile_query(source, RUN_FIELDS)
    names = {"fn-orders": FunctionNames("orders", "shop")}
    times, found = [], None
    for _ in range(rounds + 1):  # the first warms the caches, not counted
        with engine.connect() as conn:
            began = time.perf_counter()
            found = query_runs(conn, page, expression, names)
            times.append(time.perf_counter() - began)
    assert found is not None
    return statistics.median(times[1:]), found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "weir.db"
        began = time.perf_counter()
        seed(db, args.runs)
        print(f"seeded {args.runs:,} runs in {time.perf_counter() - began:.0f} s")
        print(f"window {QUERY_WINDOW:,} rows per page; load {os.getloadavg()[0]:.2f}")
        engine = make_engine(f"sqlite:///{db}")
        middle = START_MS + (args.runs // 2) * STEP_MS
        for label, source in QUERIES.items():
            first_s, first = timed(engine, source, RunPage(limit=50), args.rounds)
            # from where the first page stopped; from the middle once it is full or complete
            go_on = first.cursor is not None and len(first.rows) < 50
            cursor = first.cursor if go_on else (middle, "~")
            older_s, older = timed(engine, source, RunPage(limit=50, before=cursor), args.rounds)
            for name, seconds, found in (("first", first_s, first), ("older", older_s, older)):
                print(
                    f"{label:18} {name:6} page: {seconds * 1000:7.1f} ms median, "
                    f"{len(found.rows):3} matches, {found.examined:6,} rows examined, back to "
                    f"run {((found.back_to or START_MS) - START_MS) // STEP_MS:,}"
                )
        engine.dispose()


if __name__ == "__main__":
    main()
