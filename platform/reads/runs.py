"""Runs: one run with everything its page shows, a page of runs, what the SDK's run-state API
answers."""

from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import Connection
from weir.platform.reads import scopes
from weir.platform.store import event_records, queries, run_records, step_records
from weir.platform.store.event_records import StoredEvent
from weir.platform.store.queries import RunPage
from weir.platform.store.run_records import Run
from weir.platform.store.step_records import HistoryEntry, Step


@dataclass(frozen=True)
class RunView:
    """A run with its memoized steps, its history and its events (trigger first): what the
    run page, `GET /v1/runs/{id}` and GraphQL `run` show."""

    run: Run
    steps: list[Step]
    history: list[HistoryEntry]
    events: list[StoredEvent]

    @property
    def progress(self) -> str:
        """Changes whenever the run page would show something new."""
        return f"{self.run.status}/{len(self.history)}/{len(self.steps)}"


def run_view(conn: Connection, run_id: str, now: int | None = None) -> RunView | None:
    """Given `now`, a run waiting for a concurrency slot says which scope and how full it is."""
    run = run_records.get_run(conn, run_id)
    if run is None:
        return None
    if now is not None and run.waiting is None:
        waiting = scopes.scope_wait(conn, run, now)
        run = replace(run, waiting=waiting) if waiting is not None else run
    return RunView(
        run,
        step_records.list_steps(conn, run_id),
        step_records.list_history(conn, run_id),
        queries.events_by_ids(conn, run.event_ids),
    )


def run(conn: Connection, run_id: str) -> Run | None:
    return run_records.get_run(conn, run_id)


def step(conn: Connection, run_id: str, step_id: str) -> Step | None:
    return step_records.get_step(conn, run_id, step_id)


@dataclass(frozen=True)
class RunListing:
    """A page of runs, newest first, with the names of their triggering events."""

    runs: list[Run]
    event_names: dict[str, str]  # trigger event id -> name
    full: bool  # the page is full: there may be older runs


def run_listing(conn: Connection, page: RunPage) -> RunListing:
    rows = queries.list_runs(conn, page)
    events = queries.events_by_ids(conn, [r.trigger_id for r in rows if r.trigger_id is not None])
    return RunListing(rows, {e.id: e.name for e in events}, len(rows) == page.limit)


def run_event_payloads(conn: Connection, run_id: str) -> list[dict[str, Any]] | None:
    """The payloads of the events a run started from (a batch: all of them); None: no run."""
    found = run_records.get_run(conn, run_id)
    return None if found is None else event_records.load_event_payloads(conn, list(found.event_ids))


def run_memos(conn: Connection, run_id: str) -> dict[str, Any] | None:
    """Each memoized step's result by step id; None: no such run."""
    if run_records.get_run(conn, run_id) is None:
        return None
    return {m.step_id: m.memo for m in step_records.list_steps(conn, run_id)}
