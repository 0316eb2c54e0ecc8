"""Shared by the store suite: the Store handle and builders for queue items."""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from sqlalchemy import Connection, Engine, text
from weir.platform.store import queue as q
from weir.platform.store.database import Database

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
) -> q.NewItem:
    return q.NewItem(
        kind=kind,
        available_at=available_at,
        score=score,
        lane=lane,
        run_id=run_id,
        function_id="fn-1",
        step_id=step_id,
        payload=payload or {},
        dedupe=dedupe,
        limits=limits,
    )
