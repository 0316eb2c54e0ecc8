"""The lane view's reads with a lane of 100,000 queued runs, against the same reads of a lane
with 60 (one page and a bit), measured in the same process on the same store (the ratio is
the figure: a bounded read costs the same whatever the line's length).

The store is migrated by Weir; the lanes, their lines and the runs are written straight into
the tables in bulk (joining 100,000 runs one by one is not what this measures), with the
counters the joins keep. Each read goes through `weir.platform.reads.lanes`, as the API and
the UI call it: median of `--rounds` after a warm-up.

    .venv/bin/python bench/bench_lane_view.py                         # SQLite, 100,000
    .venv/bin/python bench/bench_lane_view.py --database-url postgresql+psycopg://...
"""

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, insert, text
from weir.platform.reads import lanes
from weir.platform.reads.lanes import Owner
from weir.platform.store.database import make_engine
from weir.platform.store.engine.schema import fifo_lanes, fifo_members, runs
from weir.platform.store.migrate import upgrade
from weir.platform.store.views import fifo_lanes as lane_reads

FUNCTION = "bench-fn"
SCOPE = lane_reads.scope_of(FUNCTION, None)
BIG, SMALL = "b" * 32, "s" * 32
OTHER_LANES = 1_000  # busy lanes beside them, each holding one run
CHUNK = 10_000
SHORT = 60  # the short line: every page compared returns 50 runs from both lanes


def seed(conn: Connection, queued: int) -> None:
    def lane(lane_id: str, key: str, holder: str, behind: int) -> dict[str, Any]:
        return {
            "lane": lane_id,
            "key": key,
            "holder": holder,
            "fence": 1,
            "next_seq": behind,
            "scope": SCOPE,
            "held_since": 0,
            "queued": behind,
        }

    rows = [lane(BIG, "big", "hold-big", queued), lane(SMALL, "small", "hold-small", SHORT)]
    rows += [lane(f"{n:032x}", f"k{n}", f"hold-{n}", 0) for n in range(OTHER_LANES)]
    conn.execute(insert(fifo_lanes), rows)
    run_ids = [r["holder"] for r in rows]
    members = [(BIG, i, f"m-big-{i}") for i in range(queued)] + [
        (SMALL, i, f"m-small-{i}") for i in range(SHORT)
    ]
    for start in range(0, len(members), CHUNK):
        part = members[start : start + CHUNK]
        conn.execute(
            insert(fifo_members),
            [
                {"lane": ln, "seq": s, "run_id": r, "start_at": 0, "payload": "{}"}
                for ln, s, r in part
            ],
        )
    run_ids += [r for _, _, r in members]
    for start in range(0, len(run_ids), CHUNK):
        conn.execute(
            insert(runs),
            [
                {
                    "id": r,
                    "function_id": FUNCTION,
                    "status": "QUEUED",
                    "event_ids": "[]",
                    "created_at": i,
                    "score": i,
                    "lane": "l",
                }
                for i, r in enumerate(run_ids[start : start + CHUNK], start)
            ],
        )


def timed(engine: Any, read: Callable[[Connection], object], rounds: int) -> float:
    with engine.connect() as conn:
        for _ in range(5):
            read(conn)
        took = []
        for _ in range(rounds):
            began = time.perf_counter()
            read(conn)
            took.append(time.perf_counter() - began)
    return statistics.median(took) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queued", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--database-url", help="default: a fresh SQLite file")
    args = parser.parse_args()
    url = args.database_url or f"sqlite:///{Path(tempfile.mkdtemp()) / 'lanes.db'}"
    engine = make_engine(url)
    upgrade(engine)
    with engine.begin() as conn:
        for table in ("fifo_members", "fifo_lanes", "runs"):
            conn.execute(text(f"DELETE FROM {table}"))
        seed(conn, args.queued)
    owner = Owner(FUNCTION, None)
    deep = lanes.encode_cursor([args.queued - 60])  # a page near the end of the long line
    shallow = lanes.encode_cursor([3])  # the same 50 rows' worth in the short line
    reads: list[tuple[str, Callable[[Connection], object], Callable[[Connection], object]]] = [
        (
            "lane (holder, since, fence, queued, next)",
            lambda c: lanes.lane(c, BIG),
            lambda c: lanes.lane(c, SMALL),
        ),
        (
            "members, first page of 50",
            lambda c: lanes.members(c, BIG, None, 50),
            lambda c: lanes.members(c, SMALL, None, 50),
        ),
        (
            "members, a page near the end",
            lambda c: lanes.members(c, BIG, deep, 50),
            lambda c: lanes.members(c, SMALL, shallow, 50),
        ),
    ]
    print(f"{engine.dialect.name}: one lane with {args.queued:,} queued vs one with {SHORT}")
    print(f"{'read':45} {'long (ms)':>10} {'short (ms)':>11} {'ratio':>6}")
    for label, long_read, short_read in reads:
        long_ms = timed(engine, long_read, args.rounds)
        short_ms = timed(engine, short_read, args.rounds)
        print(f"{label:45} {long_ms:10.3f} {short_ms:11.3f} {long_ms / short_ms:6.2f}")
    listing = timed(engine, lambda c: lanes.busy_lanes(c, owner, None, 50), args.rounds)
    everything = timed(engine, lambda c: lanes.busy_lanes(c, None, None, 50), args.rounds)
    print(f"busy lanes of the function, page of 50 ({OTHER_LANES + 2:,} busy): {listing:.3f} ms")
    print(f"busy lanes of every function, page of 50: {everything:.3f} ms")
    engine.dispose()


if __name__ == "__main__":
    main()
