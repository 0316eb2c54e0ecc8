"""Shared by the store suite: the Store handle and builders for queue items."""

import itertools
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

from sqlalchemy import Connection, Engine, text
from weir.platform.store import queue as q
from weir.platform.store.database import Database, make_engine

T = TypeVar("T")
LEASE = 1_000  # ms


@dataclass
class Store:
    """A migrated database and the Database (writer thread + readers) in front of it."""

    url: str
    engine: Engine
    db: Database

    def write(self, job: Callable[[Connection], T]) -> T:
        """Run `job` as one transaction on the writer thread, as the platform does."""
        return self.db.write_sync(job)

    def read(self, job: Callable[[Connection], T]) -> T:
        return self.db.read_sync(job)

    def rows(self, sql: str, **params: object) -> list[tuple[Any, ...]]:
        """Plain SQL over a fresh connection: what is really committed."""
        with self.engine.connect() as conn:
            return [tuple(row) for row in conn.execute(text(sql), params)]


def claimed_call(
    run_id: str,
    token: str,
    *,
    item_id: int = 1,
    function_id: str = "fn-1",
    lane: str = "fn-1",
    claimed_at: int = 0,
    series: int = 0,
) -> q.Claimed:
    """A call as a claim hands it to a worker, holding no slot."""
    return q.Claimed(
        id=item_id,
        kind="exec",
        run_id=run_id,
        function_id=function_id,
        step_id="step",
        attempt=0,
        payload={},
        lane=lane,
        token=token,
        keys=(),
        claimed_at=claimed_at,
        series=series,
    )


def new_item(
    lane: str = "lane-a",
    *,
    score: int = 0,
    available_at: int = 0,
    limits: tuple[tuple[str, int], ...] = (),
    run_id: str | None = None,
    dedupe: str | None = None,
    kind: str = "exec",
    step_id: str = "step",
    payload: dict[str, Any] | None = None,
    function_id: str = "fn-1",
) -> q.NewItem:
    return q.NewItem(
        kind=kind,
        available_at=available_at,
        score=score,
        lane=lane,
        run_id=run_id,
        function_id=function_id,
        step_id=step_id,
        payload=payload or {},
        dedupe=dedupe,
        limits=limits,
    )


def claim_from_two_processes(
    store: Store, total: int, *, start: int, step: int, max_items: int, lease_ms: int, tries: int
) -> list[tuple[int, int]]:
    """Two writers on the same database (as two processes) claim and finish due items, each
    at the next tick of one shared clock (`start`, then every `step` ms), until `total` were
    started; the (ms, item id) of each start. Fails the test if a claim raised."""
    other = Database(make_engine(store.url))
    ticks, lock = itertools.count(start, step), threading.Lock()
    starts: list[tuple[int, int]] = []
    problems: list[str] = []

    def work(db: Database) -> None:
        for _ in range(tries):
            if len(starts) >= total or problems:
                return
            with lock:
                now = next(ticks)
            try:
                claim = partial(q.claim, now=now, max_items=max_items, lease_ms=lease_ms)
                claimed = db.write_sync(claim)
                for item in claimed:
                    db.write_sync(partial(q.finish, item=item, now=now))
            except Exception as exc:
                problems.append(repr(exc))
                return
            with lock:
                starts.extend((now, item.id) for item in claimed)

    threads = [threading.Thread(target=work, args=(db,)) for db in (store.db, other)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
    finally:
        other.close()
    assert problems == []
    return starts
