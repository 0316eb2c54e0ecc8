"""A run's memoized steps and its timeline (history) as records: each row decoded once, here,
and the writes that add them (`save_memo`, `save_memos`, `add_history`, `close_history`)."""

from collections.abc import Sequence
from dataclasses import field
from typing import Any

from sqlalchemy import Connection, Row, bindparam, insert, select, update
from sqlalchemy.dialects import postgresql, sqlite
from weir.platform.foundation.record_type import record
from weir.platform.foundation.vocabulary import HistoryKind, StepStatus
from weir.platform.store.engine import json_text
from weir.platform.store.engine.fast import Fast
from weir.platform.store.engine.schema import history, steps

_STEPS = Fast(
    select(steps)
    .where(steps.c.run_id == bindparam("run"), steps.c.seq >= bindparam("since"))
    .order_by(steps.c.seq)
)
_HISTORY = select(history).where(history.c.run_id == bindparam("run")).order_by(history.c.id)
_STEP_COLUMNS = ("run_id", "step_id", "seq", "name", "op", "memo", "at")
_SAVE_MEMO = {  # a step's result is written once: a second write of the same step is ignored
    "sqlite": Fast(
        sqlite.insert(steps).on_conflict_do_nothing().returning(steps.c.seq), _STEP_COLUMNS
    ),
    "postgresql": Fast(
        postgresql.insert(steps).on_conflict_do_nothing().returning(steps.c.seq), _STEP_COLUMNS
    ),
}
_HISTORY_COLUMNS = (
    "run_id",
    "kind",
    "status",
    "started_at",
    "ended_at",
    "step_id",
    "name",
    "attempt",
    "detail",
)
_INSERT_HISTORY = Fast(insert(history), _HISTORY_COLUMNS)
_CLOSE_HISTORY = Fast(
    update(history)
    .where(
        history.c.run_id == bindparam("b_run"),
        history.c.kind == bindparam("b_kind"),
        history.c.step_id == bindparam("b_step"),
        history.c.ended_at.is_(None),
    )
    .values(status=bindparam("b_status"), ended_at=bindparam("b_now"))
)


@record(slots=True)
class Step:
    """A step's result, stored once: `memo` is what goes back to the SDK (decoded)."""

    run_id: str
    step_id: str  # hashed step id
    seq: int  # completion order
    name: str
    op: str  # StepRun, StepFailed, Sleep, WaitForEvent, InvokeFunction, AIGateway, ...
    memo: Any
    at: int


@record(slots=True)
class CallOp:
    """An op a call's answer reported."""

    op: str
    id: str
    name: str
    error: dict[str, Any] | None = None  # a failed step's error (StepError, StepFailed)
    input: list[Any] | None = None  # the arguments the SDK said the step was given


@record(slots=True)
class HistoryDetail:
    """What a timeline entry says beyond its columns; which fields are set depends on the kind.

    `data` is the detail as stored (the REST API answers it as it is)."""

    data: dict[str, Any] = field(default_factory=dict)
    # call
    returned: bool = False  # the function returned (the call completed the run)
    ops: tuple[CallOp, ...] = ()
    error: dict[str, Any] | None = None  # a failed call's error object
    http_status: int | None = None  # a failed call's HTTP status
    # sleep and wait
    until: int | None = None
    # wait
    event: str = ""
    expression: str | None = None  # the wait's `if`
    signal: str = ""  # a wait_for_signal's signal (its event is then "")
    # invoke
    function: str = ""
    # ai
    url: str = ""


@record(slots=True)
class HistoryEntry:
    """One entry of a run's timeline: a call to the app, a sleep, a wait, an invoke, ..."""

    id: int
    run_id: str
    kind: HistoryKind
    step_id: str | None
    name: str
    attempt: int
    status: StepStatus
    started_at: int
    ended_at: int | None
    detail: HistoryDetail

    @property
    def open(self) -> bool:
        return self.ended_at is None

    def mentions(self, step_id: str) -> bool:
        """A call addressed to the step, or whose answer reported an op for it."""
        return self.step_id == step_id or any(o.id == step_id for o in self.detail.ops)


def step_from_row(row: Row[Any] | Any) -> Step:
    """The one place a `steps` row becomes a `Step`."""
    return Step(
        run_id=row.run_id,
        step_id=row.step_id,
        seq=int(row.seq),
        name=row.name or "",
        op=row.op,
        memo=json_text.loads(row.memo),
        at=int(row.at),
    )


def history_from_row(row: Row[Any]) -> HistoryEntry:
    """The one place a `history` row becomes a `HistoryEntry`."""
    return HistoryEntry(
        id=int(row.id),
        run_id=row.run_id,
        kind=HistoryKind(row.kind),
        step_id=row.step_id,
        name=row.name or "",
        attempt=int(row.attempt),
        status=StepStatus(row.status),
        started_at=int(row.started_at),
        ended_at=None if row.ended_at is None else int(row.ended_at),
        detail=detail_from(json_text.loads(row.detail or "{}")),
    )


def detail_from(data: Any) -> HistoryDetail:
    if not isinstance(data, dict):
        return HistoryDetail()
    ops = tuple(
        CallOp(
            str(o.get("op") or ""),
            str(o.get("id") or ""),
            str(o.get("name") or ""),
            o["error"] if isinstance(o.get("error"), dict) else None,
            o["input"] if isinstance(o.get("input"), list) else None,
        )
        for o in data.get("ops") or []
        if isinstance(o, dict)
    )
    error, status, until = data.get("error"), data.get("status"), data.get("until")
    return HistoryDetail(
        data=data,
        returned=data.get("result") == "completed",
        ops=ops,
        error=(error if isinstance(error, dict) else {}) if "error" in data else None,
        http_status=status if isinstance(status, int) else None,
        until=until if isinstance(until, int) else None,
        event=str(data.get("event") or ""),
        expression=data["if"] if isinstance(data.get("if"), str) else None,
        signal=str(data.get("signal") or ""),
        function=str(data.get("function") or ""),
        url=str(data.get("url") or ""),
    )


def list_steps(conn: Connection, run_id: str, since: int = 0) -> list[Step]:
    """The run's memoized steps in completion order; `since`: only those numbered from there
    on (a step's number never changes, and a later step's is higher)."""
    return [step_from_row(r) for r in _STEPS.all(conn, {"run": run_id, "since": since})]


def get_step(conn: Connection, run_id: str, step_id: str) -> Step | None:
    query = select(steps).where(steps.c.run_id == run_id, steps.c.step_id == step_id)
    row = conn.execute(query).first()
    return None if row is None else step_from_row(row)


def list_history(conn: Connection, run_id: str) -> list[HistoryEntry]:
    return [history_from_row(r) for r in conn.execute(_HISTORY, {"run": run_id})]


def save_memo(
    conn: Connection, run_id: str, step_id: str, seq: int, name: str, op: str, memo: str, now: int
) -> bool:
    """Store a step's result once; False if it was already stored (never overwritten)."""
    row = {
        "run_id": run_id,
        "step_id": step_id,
        "seq": seq,
        "name": name,
        "op": op,
        "memo": memo,
        "at": now,
    }
    # RETURNING, not rowcount: psycopg reports -1 rows for INSERT ... ON CONFLICT DO NOTHING.
    return _SAVE_MEMO[conn.dialect.name].first(conn, row) is not None


@record
class NewMemo:
    """A step result to store: its id, name, the op that produced it, and its JSON text."""

    step_id: str
    name: str
    op: str
    memo: str


SAVE_CHUNK = 50  # rows per INSERT: a checkpointed answer's steps go in one statement or a few
_SAVE_MANY: dict[tuple[str, int], Fast] = {}


def save_memos(
    conn: Connection, run_id: str, memos: Sequence[NewMemo], seq: int, now: int
) -> dict[str, int]:
    """Store results in order, numbered from `seq` on, each once (a step already stored keeps
    its result, and its number is left unused); the new ones' step ids and numbers."""
    saved: dict[str, int] = {}
    for start in range(0, len(memos), SAVE_CHUNK):
        chunk = memos[start : start + SAVE_CHUNK]
        params: dict[str, Any] = {}
        for i, m in enumerate(chunk):
            values = (run_id, m.step_id, seq + start + i, m.name, m.op, m.memo, now)
            params.update({f"b_{c}_{i}": v for c, v in zip(_STEP_COLUMNS, values, strict=True)})
        rows = _save_many(conn.dialect.name, len(chunk)).all(conn, params)
        saved.update({str(r.step_id): int(r.seq) for r in rows})
    return saved


def _save_many(dialect: str, n: int) -> Fast:
    found = _SAVE_MANY.get((dialect, n))
    if found is None:
        dialect_insert = sqlite.insert if dialect == "sqlite" else postgresql.insert
        rows: list[dict[str, Any]] = [
            {c: bindparam(f"b_{c}_{i}") for c in _STEP_COLUMNS} for i in range(n)
        ]
        stmt = dialect_insert(steps).values(rows).on_conflict_do_nothing()
        found = _SAVE_MANY[(dialect, n)] = Fast(stmt.returning(steps.c.step_id, steps.c.seq))
    return found


def add_history(
    conn: Connection,
    run_id: str,
    kind: str,
    status: str,
    started_at: int,
    ended_at: int | None,
    *,
    step_id: str | None = None,
    name: str = "",
    attempt: int = 0,
    detail: dict[str, Any] | None = None,
) -> None:
    row = {
        "run_id": run_id,
        "kind": kind,
        "status": status,
        "started_at": started_at,
        "ended_at": ended_at,
        "step_id": step_id,
        "name": name,
        "attempt": attempt,
        "detail": json_text.dumps(detail or {}),
    }
    _INSERT_HISTORY.run(conn, row)


def close_history(
    conn: Connection, run_id: str, kind: str, step_id: str, status: str, now: int
) -> None:
    params = {"b_run": run_id, "b_kind": kind, "b_step": step_id, "b_status": status, "b_now": now}
    _CLOSE_HISTORY.run(conn, params)
