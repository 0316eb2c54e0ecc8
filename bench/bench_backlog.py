"""Flat growth: what one queue item costs (enqueue, claim, finish, each its own transaction,
as Weir does them) while a backlog waits in the same store — 0, 1k, 10k and 100k items of
three kinds: runs sleeping (timers due in an hour), runs queued behind one full concurrency
key (one hot lane), and runs each parked on its own full key (many keyed lanes).

The work measured runs in a lane of its own, with a concurrency key (limit 1,000) so that
finishing releases a slot and wakes parked lanes, as keyed functions do. An empty store,
measured alternately with it, is the baseline; a ratio near 1.0 at 100k means the backlog
costs the hot path nothing.

    .venv/bin/python bench/bench_backlog.py                    # SQLite, 3 rounds
    .venv/bin/python bench/bench_backlog.py --sizes 1000,10000  # quicker
"""

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from sqlalchemy import Connection, Engine
from weir.platform.store import queue as q
from weir.platform.store.database import make_engine
from weir.platform.store.migrate import upgrade

NOW = 1_767_268_800_000
HOUR = 3_600_000
LEASE = 60_000
WORK_KEY = ("k-work", 1000)
BACKLOGS = ("sleeping", "hot lane", "keyed lanes")


Limits = tuple[tuple[str, int], ...]


def item(lane: str, at: int, limits: Limits = (), kind: str = "exec") -> q.NewItem:
    return q.NewItem(kind=kind, available_at=at, score=at, lane=lane, run_id="r", limits=limits)


def fill(engine: Engine, kind: str, n: int) -> None:
    """`n` waiting items of one backlog kind, written in a few large transactions."""
    with engine.begin() as conn:
        if kind == "sleeping":
            for i in range(n):
                q.enqueue(conn, item(q.TIMER_LANE, NOW + HOUR + i, kind="sleep"))
        elif kind == "hot lane":
            _hold(conn, "hot", (("k-hot", 1),))
            for i in range(n):
                q.enqueue(conn, item("hot", NOW + i % 1000, (("k-hot", 1),)))
        else:
            for i in range(n):
                _hold(conn, f"user-{i}", ((f"k-{i}", 1),))
                q.enqueue(conn, item(f"user-{i}", NOW, ((f"k-{i}", 1),)))
    _settle(engine)


def _hold(conn: Connection, lane: str, limits: Limits) -> None:
    """A claimed item that keeps its key full for the whole bench (its holder never ends)."""
    q.enqueue(conn, item(lane, NOW - 1, limits))
    q.claim(conn, NOW - 1, 1, 10 * HOUR)


def _settle(engine: Engine) -> None:
    """Claim until nothing more is due now: the keyed lanes park on their full keys."""
    with engine.begin() as conn:
        while (due := q.next_due(conn)) is not None and due <= NOW:
            q.claim(conn, NOW, 500, 10 * HOUR)


def work(engine: Engine, count: int, start: int) -> float:
    """CPU seconds for `count` items through enqueue, claim and finish."""
    t0 = time.process_time()
    for i in range(count):
        now = NOW + 1 + start + i
        with engine.begin() as conn:
            q.enqueue(conn, item("work", now, (WORK_KEY,)))
        with engine.begin() as conn:
            claimed = q.claim(conn, now, 1, LEASE)
        assert len(claimed) == 1 and claimed[0].lane == "work", claimed
        with engine.begin() as conn:
            q.finish(conn, claimed[0], now)
    return time.process_time() - t0


def store(tmp: Path, kind: str, n: int) -> Engine:
    db = tmp / f"{kind.replace(' ', '-')}-{n}.db"
    db.unlink(missing_ok=True)
    engine = make_engine(f"sqlite:///{db}")
    upgrade(engine)
    if n:
        fill(engine, kind, n)
    return engine


def measure(tmp: Path, kind: str, n: int, count: int, rounds: int) -> tuple[float, float]:
    """Median CPU µs per item with the backlog, and the median ratio to an empty store
    measured alternately with it (round by round, so load drift hits both alike)."""
    empty, full = store(tmp, "empty", 0), store(tmp, kind, n)
    costs, ratios = [], []
    for r in range(rounds):
        base = work(empty, count, r * count)
        cost = work(full, count, r * count)
        costs.append(cost / count * 1e6)
        ratios.append(cost / base)
    empty.dispose()
    full.dispose()
    return statistics.median(costs), statistics.median(ratios)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--items", type=int, default=500, help="items measured per round")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"load: {os.getloadavg()[0]:.2f} (1 min); CPU µs per item (enqueue+claim+finish)")
    print(f"{'backlog':<14} {'size':>8} {'µs/item':>9} {'vs empty':>9}")
    with tempfile.TemporaryDirectory(prefix="weir-bench-backlog-") as tmp:
        for kind in BACKLOGS:
            for n in sizes:
                cost, ratio = measure(Path(tmp), kind, n, args.items, args.rounds)
                print(f"{kind:<14} {n:>8,} {cost:>9.0f} {ratio:>8.2f}x", flush=True)


if __name__ == "__main__":
    sys.exit(main())
