"""Runs as records: the `runs` row decoded once into an immutable `Run`, and the named operations
that create, read and change a run (no other package sees a `runs` row).
"""

from collections.abc import Iterable, Sequence
from dataclasses import field, replace
from typing import Any

from sqlalchemy import (
    BigInteger,
    Connection,
    Row,
    String,
    any_,
    bindparam,
    func,
    insert,
    literal_column,
    select,
    update,
)
from sqlalchemy.dialects.postgresql import ARRAY
from weir.platform.foundation.record_type import record
from weir.platform.foundation.vocabulary import ENDED, RunStatus
from weir.platform.store.engine import json_text
from weir.platform.store.engine.fast import Fast, constants
from weir.platform.store.engine.schema import event_runs, runs
from weir.platform.store.flow.fifo_lanes import LANE_KEY
from weir.platform.store.queue import SlotLimit, limits_from_json

_INSERT_COLUMNS = (
    "id",
    "function_id",
    "status",
    "event_ids",
    "batch_id",
    "cron",
    "original_run_id",
    "correlation_id",
    "created_at",
    "score",
    "lane",
    "keys",
    "waiting",
    "warnings",
)
_INSERT_RUN = Fast(insert(runs), _INSERT_COLUMNS)
_INSERT_EVENT_RUN = Fast(insert(event_runs), ("event_id", "run_id"))
_GET_RUN = Fast(select(runs).where(runs.c.id == bindparam("b_id")))
_UPDATE_RUN = update(runs).where(runs.c.id == bindparam("b_id"))
_UPDATES: dict[tuple[str, ...], Fast] = {}  # one statement per set of changed columns
# The same read, holding the run's row until the transaction ends (PostgreSQL; SQLite has one
# writer): two answers for one run, applied at once, each see the other's result.
_LOCK_RUN = Fast(select(runs).where(runs.c.id == bindparam("b_id")).with_for_update())
# Several runs by id in one statement (a claim's calls): the ids go as one bound value, a JSON
# list that SQLite reads with json_each, an array on PostgreSQL (a Fast statement takes no
# expanding IN list).
_GET_RUNS = {
    "sqlite": Fast(
        select(runs).where(
            runs.c.id.in_(
                select(literal_column("value")).select_from(func.json_each(bindparam("b_ids")))
            )
        )
    ),
    "postgresql": Fast(
        select(runs).where(runs.c.id == any_(bindparam("b_ids", type_=ARRAY(String))))
    ),
}


_LIVE = runs.c.status.not_in(constants(ENDED))
_HANDED = update(runs).where(runs.c.id == bindparam("b_id"), _LIVE)
# SQLite sets the lane's fence inside the stored keys itself (json_set).
_FENCE_PATH = f"$.{LANE_KEY}.fence"
_LANE_HANDED = Fast(
    _HANDED.values(
        keys=func.json_set(runs.c["keys"], _FENCE_PATH, bindparam("b_fence", type_=BigInteger)),
        waiting=None,
    ).returning(*runs.c)
)
# PostgreSQL would parse the text as jsonb, which refuses a NUL character (a key's text may
# hold one): its statement ends the wait, and the fence is written after it.
_WAIT_ENDED = Fast(_HANDED.values(waiting=None).returning(*runs.c))


@record(slots=True)
class PendingStep:
    """A step the run has opened and not yet resolved (its work is queued or in flight)."""

    id: str
    race: bool = False


@record(slots=True)
class Run:
    """One run, its JSON columns decoded."""

    id: str
    function_id: str
    status: RunStatus
    event_ids: tuple[str, ...]  # the first is the triggering event
    created_at: int
    score: int  # created_at - priority, for queue order
    lane: str
    batch_id: str | None = None
    cron: str | None = None
    original_run_id: str | None = None  # set on reruns
    correlation_id: str | None = None  # invoke: "<parent run>.<step>"
    started_at: int | None = None
    ended_at: int | None = None
    output: Any = None  # once ended: the return value, or the error object
    keys: dict[str, Any] = field(default_factory=dict)  # evaluated gate keys, and "limits"
    force_plan: bool = False
    pending: tuple[PendingStep, ...] = ()
    step_count: int = 0
    state_bytes: int = 0
    cancel_requested: bool = False
    waiting: dict[str, Any] | None = None  # WaitReason: why the run is not moving
    warnings: tuple[str, ...] = ()

    @property
    def ended(self) -> bool:
        return self.status in ENDED

    @property
    def trigger_id(self) -> str | None:
        return self.event_ids[0] if self.event_ids else None

    @property
    def limits(self) -> tuple[SlotLimit, ...]:
        """Every concurrency key the run's items need a slot of."""
        return limits_from_json(self.keys.get("limits", []))


@record(slots=True)
class NewRun:
    """What a run is created with; everything else starts empty."""

    id: str
    function_id: str
    event_ids: Sequence[str]
    created_at: int
    score: int
    lane: str
    keys: dict[str, Any] = field(default_factory=dict)
    waiting: dict[str, Any] | None = None
    warnings: Sequence[str] = ()
    batch_id: str | None = None
    cron: str | None = None
    original_run_id: str | None = None
    correlation_id: str | None = None


def run_from_row(row: Row[Any] | Any) -> Run:
    """The one place a `runs` row becomes a `Run`."""
    pending = _list(row.pending)
    return Run(
        id=row.id,
        function_id=row.function_id,
        status=RunStatus(row.status),
        event_ids=_ids(row.event_ids),
        created_at=int(row.created_at),
        score=int(row.score),
        lane=row.lane,
        batch_id=row.batch_id,
        cron=row.cron,
        original_run_id=row.original_run_id,
        correlation_id=row.correlation_id,
        started_at=_int(row.started_at),
        ended_at=_int(row.ended_at),
        output=json_text.loads(row.output) if row.output is not None else None,
        keys=json_text.loads(row.keys) if row.keys and row.keys != "{}" else {},
        force_plan=bool(row.force_plan),
        pending=tuple(PendingStep(str(p["id"]), bool(p.get("race"))) for p in pending),
        step_count=int(row.step_count),
        state_bytes=int(row.state_bytes),
        cancel_requested=bool(row.cancel_requested),
        waiting=json_text.loads(row.waiting) if row.waiting else None,
        warnings=tuple(_list(row.warnings)),
    )


# A row is decoded for nearly every transition, and most of its JSON columns hold an empty
# list or one event id: those are read without the JSON decoder (a few µs a column).
def _list(text: str) -> list[Any]:
    return [] if text == "[]" else list(json_text.loads(text))


def _ids(text: str) -> tuple[str, ...]:
    """A JSON list of ids; one plain id (no quote or escape inside) is read as it is."""
    inner = text[2:-2]
    if text[:2] == '["' and text[-2:] == '"]' and '"' not in inner and "\\" not in inner:
        return (inner,)
    return tuple(json_text.loads(text))


def _int(value: Any) -> int | None:
    return None if value is None else int(value)


def _pending_json(pending: Iterable[PendingStep]) -> str:
    return json_text.dumps([{"id": p.id, "race": p.race} for p in pending])


# -- reads -------------------------------------------------------------------------------------
def get_run(conn: Connection, run_id: str) -> Run | None:
    row = _GET_RUN.first(conn, {"b_id": run_id})
    return None if row is None else run_from_row(row)


def get_runs(conn: Connection, run_ids: Sequence[str]) -> dict[str, Run]:
    """The runs of `run_ids` that exist, by id: one statement for all of them."""
    if len(run_ids) == 1:
        run = get_run(conn, run_ids[0])
        return {} if run is None else {run.id: run}
    ids = list(dict.fromkeys(run_ids))
    bound = json_text.dumps(ids) if conn.dialect.name == "sqlite" else ids
    rows = _GET_RUNS[conn.dialect.name].all(conn, {"b_ids": bound})
    return {row.id: run_from_row(row) for row in rows}


def cancelled_among(conn: Connection, run_ids: list[str]) -> list[str]:
    """Those of the runs that are cancelled."""
    query = select(runs.c.id).where(runs.c.id.in_(run_ids), runs.c.status == RunStatus.CANCELLED)
    return [str(row.id) for row in conn.execute(query)]


def lock_run(conn: Connection, run_id: str) -> Run | None:
    """The run, its row locked for this transaction: for writes that read, then change it."""
    row = _LOCK_RUN.first(conn, {"b_id": run_id})
    return None if row is None else run_from_row(row)


def runs_for_event(conn: Connection, event_id: str) -> list[Run]:
    query = (
        select(runs)
        .join(event_runs, event_runs.c.run_id == runs.c.id)
        .where(event_runs.c.event_id == event_id)
        .order_by(runs.c.id)
    )
    return [run_from_row(r) for r in conn.execute(query)]


# -- writes ------------------------------------------------------------------------------------
def insert_run(conn: Connection, new: NewRun) -> None:
    """A QUEUED run, linked to each of its events once."""
    row = {
        "id": new.id,
        "function_id": new.function_id,
        "status": RunStatus.QUEUED,
        "event_ids": json_text.dumps(list(new.event_ids)),
        "batch_id": new.batch_id,
        "cron": new.cron,
        "original_run_id": new.original_run_id,
        "correlation_id": new.correlation_id,
        "created_at": new.created_at,
        "score": new.score,
        "lane": new.lane,
        "keys": json_text.dumps(new.keys),
        "waiting": json_text.dumps(new.waiting) if new.waiting else None,
        "warnings": json_text.dumps(list(new.warnings)),
    }
    _INSERT_RUN.run(conn, row)
    links = [{"event_id": e, "run_id": new.id} for e in dict.fromkeys(new.event_ids)]
    if len(links) == 1:
        _INSERT_EVENT_RUN.run(conn, links[0])
    else:
        _INSERT_EVENT_RUN.many(conn, links)


def mark_started(conn: Connection, run_id: str, at: int) -> None:
    """Its first call began at `at`: the run is RUNNING and waits for nothing."""
    _update(conn, run_id, status=RunStatus.RUNNING, started_at=at, waiting=None)


def set_waiting(conn: Connection, run_id: str, waiting: dict[str, Any] | None) -> None:
    """Why the run is not moving (None: it is)."""
    _update(conn, run_id, waiting=json_text.dumps(waiting) if waiting else None)


def lane_handed(conn: Connection, run_id: str, fence: int) -> Run | None:
    """The run now holds its FIFO lane: its keys carry the lane's new fence, and it no longer
    waits in line. The run as it then stands; None if it is gone or has ended (then nothing
    changed). On SQLite one statement reads and writes the run at once."""
    if conn.dialect.name == "sqlite":
        row = _LANE_HANDED.first(conn, {"b_id": run_id, "b_fence": fence})
        return None if row is None else run_from_row(row)
    row = _WAIT_ENDED.first(conn, {"b_id": run_id})
    if row is None:
        return None
    run = run_from_row(row)
    keys = {**run.keys, LANE_KEY: {**run.keys[LANE_KEY], "fence": fence}}
    _update(conn, run_id, keys=json_text.dumps(keys))
    return replace(run, keys=keys)


RERUN_INPUT_KEY = "rerun_input"  # in `keys`: {"step", "input", "via"} of a rerun from a step


def set_rerun_input(conn: Connection, run: Run, step_id: str, given: list[Any], via: str) -> None:
    """A rerun from step `step_id` gives it `given` as its input: the SDK's arguments
    (`via` "sdk") or the body of the request Weir makes for it (`via` "ai")."""
    keys = {**run.keys, RERUN_INPUT_KEY: {"step": step_id, "input": given, "via": via}}
    _update(conn, run.id, keys=json_text.dumps(keys))


def set_pending(
    conn: Connection, run_id: str, pending: Sequence[PendingStep], force_plan: bool
) -> None:
    """The steps the run has opened; `force_plan` while a parallel group is open."""
    _update(conn, run_id, pending=_pending_json(pending), force_plan=force_plan)


def step_saved(
    conn: Connection,
    run_id: str,
    *,
    step_count: int,
    state_bytes: int,
    pending: Sequence[PendingStep],
    force_plan: bool,
) -> None:
    """A step's result was stored: its counters and the steps still open."""
    _update(
        conn,
        run_id,
        step_count=step_count,
        state_bytes=state_bytes,
        pending=_pending_json(pending),
        force_plan=force_plan,
    )


def finish(
    conn: Connection,
    run_id: str,
    status: RunStatus,
    at: int,
    output: Any,
    *,
    started_at: int | None = None,
) -> None:
    """End the run with `output` (the return value, or the error object); `started_at` if
    the run starts and ends in one write."""
    values: dict[str, Any] = {
        "status": status,
        "ended_at": at,
        "waiting": None,
        "output": json_text.dumps(output),
    }
    if started_at is not None:
        values["started_at"] = started_at
    _update(conn, run_id, **values)


def _update(conn: Connection, run_id: str, **values: Any) -> None:
    columns = tuple(values)
    stmt = _UPDATES.get(columns)
    if stmt is None:
        stmt = _UPDATES[columns] = Fast(_UPDATE_RUN, columns)
    stmt.run(conn, {"b_id": run_id, **values})
