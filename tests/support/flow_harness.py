"""A Platform-free harness for flow-control tests: a real store (the SQLite file or PostgreSQL
schema that `database_url` names), a registry built from FunctionConfig objects, and a fake
clock that the test moves by hand.

`send` accepts events the way the API does (runtime.events.accept in one transaction);
`advance` claims every item that falls due up to a time, exactly at its due ms: timer items
are handled (debounce, batch, timeouts), exec items are recorded as started and left leased.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Engine, select
from weir.platform.foundation.vocabulary import RunStatus
from weir.platform.functions import EventTrigger, FunctionConfig
from weir.platform.ingest.validate import IncomingEvent
from weir.platform.registry import Function, Registry
from weir.platform.runtime import events, finish_hooks, runs, timers
from weir.platform.runtime.tx import Tx
from weir.platform.store import queue as q
from weir.platform.store.database import make_engine
from weir.platform.store.engine.schema import event_outcomes, gate_state, queue, waits
from weir.platform.store.engine.schema import runs as runs_table
from weir.platform.store.records import runs as run_records
from weir.platform.store.records.runs import Run, run_from_row

from tests.support.migrated import migrate

NOON = 1_767_268_800_000  # 2026-01-01T12:00:00Z
EVENT = "app/go"
LEASE_MS = 10**9  # started calls stay leased for the whole test


def config(slug: str = "fn", **options: Any) -> FunctionConfig:
    return FunctionConfig(
        slug=slug,
        name=slug,
        url=f"http://app.test/api?fnId={slug}&stepId=step",
        retries=0,
        triggers=(EventTrigger(EVENT, None),),
        **options,
    )


class Harness:
    def __init__(self, database_url: str, *configs: FunctionConfig) -> None:
        self.database_url = database_url
        self.configs = configs or (config(),)
        self.now = NOON
        self.started: list[tuple[int, str]] = []  # (claim ms, run id) of exec items
        self.engine = self._open()
        self.registry = self._registry()

    def _open(self) -> Engine:
        migrate(self.database_url)  # upgrade()'s result, from a template (tests.support.migrated)
        return make_engine(self.database_url)

    def _registry(self) -> Registry:
        registry = Registry()
        for cfg in self.configs:
            registry.add(Function(id=cfg.slug, app_id="app", slug=cfg.slug, config=cfg, version=1))
        return registry

    def restart(self) -> None:
        """A new process on the same database: nothing survives but the store."""
        self.engine.dispose()
        self.engine = self._open()
        self.registry = self._registry()

    @contextmanager
    def tx(self, now: int | None = None) -> Iterator[Tx]:
        at = self.now if now is None else now
        with self.engine.begin() as conn:
            tx = Tx(conn, at, self.registry)
            yield tx
            finish_hooks.settle(tx)  # as Platform.write does after every transition

    # -- events ----------------------------------------------------------------------------
    def send(
        self,
        at: int,
        data: dict[str, Any] | None = None,
        *,
        name: str = EVENT,
        ts: int | None = None,
        user_id: str | None = None,
    ) -> str:
        self.advance(at)
        incoming = IncomingEvent(name, data or {}, user_id, at if ts is None else ts, {}, None)
        with self.tx(at) as tx:
            return events.accept(tx, [incoming])[0]

    def burst(self, at: int, datas: list[dict[str, Any]]) -> list[str]:
        """Several events in one request (one transaction), in this order."""
        self.advance(at)
        incoming = [IncomingEvent(EVENT, d, None, at, {}, None) for d in datas]
        with self.tx(at) as tx:
            return events.accept(tx, incoming)

    # -- the clock -------------------------------------------------------------------------
    def advance(self, to: int) -> None:
        """Claim everything due up to `to`, each at its own due ms, then stand at `to`."""
        while True:
            with self.engine.begin() as conn:
                due = q.next_due(conn)
            if due is None or due > to:
                break
            self._tick(max(due, self.now))
        self.now = max(self.now, to)

    def stall_until(self, now: int) -> None:
        """A scheduler that fell behind (or restarted): one claim at `now`, however much fell
        due before it."""
        self._tick(now)

    def _tick(self, now: int) -> None:
        self.now = now
        with self.engine.begin() as conn:
            claimed = q.claim(conn, now, 1000, LEASE_MS)
        for item in claimed:
            if item.kind == "exec":
                self.started.append((now, item.run_id or ""))
                continue
            with self.tx(now) as tx:
                timers.handle(tx, item)

    # -- run lifecycle, as the executor would drive it ---------------------------------------
    def mark_started(self, run_id: str, at: int) -> None:
        with self.tx(at) as tx:
            run = run_records.get_run(tx.conn, run_id)
            assert run is not None
            runs.mark_started(tx, run, at)

    def finish(self, run_id: str, at: int, status: str = "COMPLETED") -> None:
        self.advance(at)
        with self.tx(at) as tx:
            runs.finish_run(tx, run_id, RunStatus(status), None)

    # -- what the store says ---------------------------------------------------------------
    def runs(self, fn: str | None = None) -> list[Run]:
        query = select(runs_table).order_by(runs_table.c.created_at, runs_table.c.id)
        if fn is not None:
            query = query.where(runs_table.c.function_id == fn)
        with self.engine.connect() as conn:
            return [run_from_row(r) for r in conn.execute(query)]

    def run(self, run_id: str) -> Run:
        with self.engine.connect() as conn:
            run = run_records.get_run(conn, run_id)
        assert run is not None, run_id
        return run

    def start_times(self, fn: str | None = None) -> list[int]:
        """When each run's first call was claimed (`advance` claims at the exact due ms), or
        the `available_at` it waits for; in run creation order."""
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(queue.c.run_id, queue.c.available_at).where(queue.c.kind == "exec")
            ).all()
        at = {r.run_id: r.available_at for r in rows if r.run_id}
        at.update({run_id: when for when, run_id in reversed(self.started)})
        return [at[r.id] for r in self.runs(fn) if r.id in at]

    def outcomes(self, outcome: str | None = None) -> list[Any]:
        query = select(event_outcomes).order_by(event_outcomes.c.id)
        if outcome is not None:
            query = query.where(event_outcomes.c.outcome == outcome)
        with self.engine.connect() as conn:
            return list(conn.execute(query))

    def gate_rows(self, gate: str) -> list[dict[str, Any]]:
        query = select(gate_state.c.state).where(gate_state.c.gate == gate)
        with self.engine.connect() as conn:
            return [json.loads(r.state) for r in conn.execute(query)]

    def queued(self, kind: str) -> list[Any]:
        query = select(queue).where(queue.c.kind == kind).order_by(queue.c.available_at)
        with self.engine.connect() as conn:
            return list(conn.execute(query))

    def waits(self) -> list[Any]:
        with self.engine.connect() as conn:
            return list(conn.execute(select(waits).order_by(waits.c.id)))


def event_ids(run: Run) -> list[str]:
    return list(run.event_ids)


def waiting(run: Run) -> dict[str, Any] | None:
    return None if run.waiting is None else dict(run.waiting)


def warnings(run: Run) -> list[str]:
    return list(run.warnings)
