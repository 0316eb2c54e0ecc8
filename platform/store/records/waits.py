"""Open waits as records: wait_for_event pauses, invoke results and cancel-on subscriptions."""

from typing import Any

from sqlalchemy import Connection, Row, bindparam, delete, insert, select
from weir.platform.foundation.record_type import record
from weir.platform.foundation.vocabulary import WaitKind
from weir.platform.store.engine.fast import Fast, constants
from weir.platform.store.engine.schema import waits

# Invoke waits share the name of the event that ends them (function.finished) but are found
# by correlation id: matching passes them over, through the index (migration 0015).
_MATCHED_KINDS = (WaitKind.WAIT, WaitKind.CANCEL)
_WAITS_FOR_EVENT = Fast(
    select(waits)
    .where(
        waits.c.event_name == bindparam("name"),
        waits.c.kind.in_(constants(_MATCHED_KINDS)),
        waits.c.created_at < bindparam("at"),
    )
    .order_by(waits.c.id)
)
_DELETE_RUN_WAITS = Fast(delete(waits).where(waits.c.run_id == bindparam("run")))


@record(slots=True)
class NewWait:
    kind: WaitKind
    run_id: str
    event_name: str  # the event that resumes (or cancels) the run
    created_at: int
    expires_at: int
    step_id: str | None = None  # none for a cancel-on subscription
    expression: str | None = None  # the `if` the event must meet
    correlation_id: str | None = None  # invoke: "<parent run>.<step>"


@record(slots=True)
class Wait:
    id: int
    kind: WaitKind
    run_id: str
    event_name: str
    created_at: int
    expires_at: int
    step_id: str | None
    expression: str | None
    correlation_id: str | None

    @property
    def step(self) -> str:
        """The step a wait or an invoke resumes (a cancel-on subscription resumes none)."""
        if self.step_id is None:
            raise ValueError(f"a {self.kind} wait resumes no step")
        return self.step_id


def wait_from_row(row: Row[Any] | Any) -> Wait:
    """The one place a `waits` row becomes a `Wait`."""
    return Wait(
        id=int(row.id),
        kind=WaitKind(row.kind),
        run_id=row.run_id,
        event_name=row.event_name,
        created_at=int(row.created_at),
        expires_at=int(row.expires_at),
        step_id=row.step_id,
        expression=row.expression,
        correlation_id=row.correlation_id,
    )


def insert_wait(conn: Connection, new: NewWait) -> int:
    values = {
        "kind": new.kind,
        "run_id": new.run_id,
        "step_id": new.step_id,
        "event_name": new.event_name,
        "expression": new.expression,
        "correlation_id": new.correlation_id,
        "created_at": new.created_at,
        "expires_at": new.expires_at,
    }
    return int(conn.execute(insert(waits).values(values).returning(waits.c.id)).scalar_one())


def waits_for_event(conn: Connection, event_name: str, received_at: int) -> list[Wait]:
    """The waits and cancel-on subscriptions on `event_name` opened before the event arrived
    (not invoke waits: those are ended by correlation id)."""
    found = _WAITS_FOR_EVENT.all(conn, {"name": event_name, "at": received_at})
    return [wait_from_row(r) for r in found]


def get_wait(conn: Connection, run_id: str, step_id: str) -> Wait | None:
    query = select(waits).where(waits.c.run_id == run_id, waits.c.step_id == step_id)
    row = conn.execute(query).first()
    return None if row is None else wait_from_row(row)


def wait_by_correlation(conn: Connection, correlation_id: str) -> Wait | None:
    row = conn.execute(select(waits).where(waits.c.correlation_id == correlation_id)).first()
    return None if row is None else wait_from_row(row)


def delete_wait(conn: Connection, wait_id: int) -> bool:
    """False if it was gone already (another event or its timeout took it)."""
    return conn.execute(delete(waits).where(waits.c.id == wait_id)).rowcount == 1


def delete_run_waits(conn: Connection, run_id: str) -> None:
    _DELETE_RUN_WAITS.run(conn, {"run": run_id})


def run_waits(conn: Connection, run_id: str) -> list[Wait]:
    return [wait_from_row(r) for r in conn.execute(select(waits).where(waits.c.run_id == run_id))]
