"""Paused functions and the audit of who paused and resumed them (no other package sees a
`function_pauses` or `function_pause_changes` row).

A function's row stays once it was ever paused: resuming clears its `mode`, and every change
moves `changed_at` past the catalog's version, so that other processes reload their
registries (which hold the paused functions) on their next look (`catalog.catalog_version`).
"""

from typing import Any

from sqlalchemy import Connection, Row, func, insert, select, update
from weir.platform.foundation.record_type import record
from weir.platform.foundation.vocabulary import InProgress, PauseAction, PauseMode
from weir.platform.store.engine import dialect
from weir.platform.store.engine.schema import function_pause_changes, function_pauses

MAX_CHANGES = 50  # the latest changes a function's page and GET show


@record(slots=True)
class FunctionPause:
    """A paused function: how, since when and by whom."""

    function_id: str
    mode: PauseMode
    in_progress: InProgress
    paused_at: int
    paused_by: str


@record(slots=True)
class PauseChange:
    """One line of the audit: who paused or resumed the function, when and how."""

    function_id: str
    action: PauseAction
    mode: PauseMode | None
    in_progress: InProgress | None
    actor: str
    at: int
    runs: int  # the runs this change cancelled


def _pause(row: Row[Any]) -> FunctionPause:
    return FunctionPause(
        function_id=row.function_id,
        mode=PauseMode(row.mode),
        in_progress=InProgress(row.in_progress),
        paused_at=int(row.paused_at),
        paused_by=str(row.paused_by),
    )


def _change(row: Row[Any]) -> PauseChange:
    return PauseChange(
        function_id=row.function_id,
        action=PauseAction(row.action),
        mode=PauseMode(row.mode) if row.mode else None,
        in_progress=InProgress(row.in_progress) if row.in_progress else None,
        actor=row.actor,
        at=int(row.at),
        runs=int(row.runs),
    )


_PAUSED = select(function_pauses).where(function_pauses.c.mode.is_not(None))


def all_paused(conn: Connection) -> list[FunctionPause]:
    """Every paused function (read with the catalog, into the registry)."""
    return [_pause(row) for row in conn.execute(_PAUSED)]


def paused_of(conn: Connection, function_ids: set[str]) -> dict[str, FunctionPause]:
    """The paused ones among `function_ids`, by id."""
    if not function_ids:
        return {}
    query = _PAUSED.where(function_pauses.c.function_id.in_(sorted(function_ids)))
    return {row.function_id: _pause(row) for row in conn.execute(query)}


def get(conn: Connection, function_id: str) -> FunctionPause | None:
    """The function's pause, locked against another change until the transaction ends."""
    dialect.lock(conn, dialect.GATE_KEY, f"pause:{function_id}")
    return paused_of(conn, {function_id}).get(function_id)


def version(conn: Connection) -> int:
    """The latest change to any function's paused state (0: none ever)."""
    return int(conn.execute(select(func.max(function_pauses.c.changed_at))).scalar() or 0)


def set_paused(conn: Connection, pause: FunctionPause, changed_at: int) -> None:
    values = {
        "mode": pause.mode,
        "in_progress": pause.in_progress,
        "paused_at": pause.paused_at,
        "paused_by": pause.paused_by,
        "changed_at": changed_at,
    }
    _upsert(conn, pause.function_id, values)


def clear(conn: Connection, function_id: str, changed_at: int) -> None:
    values = {
        "mode": None,
        "in_progress": None,
        "paused_at": None,
        "paused_by": None,
        "changed_at": changed_at,
    }
    _upsert(conn, function_id, values)


def _upsert(conn: Connection, function_id: str, values: dict[str, Any]) -> None:
    """Under `get`'s lock: nobody inserts the row meanwhile."""
    table = function_pauses
    done = conn.execute(update(table).where(table.c.function_id == function_id).values(**values))
    if done.rowcount == 0:
        conn.execute(insert(table).values(function_id=function_id, **values))
    dialect.notify(conn, dialect.CATALOG)  # other processes reload their registries


def record_change(conn: Connection, change: PauseChange) -> None:
    conn.execute(
        insert(function_pause_changes).values(
            function_id=change.function_id,
            action=change.action,
            mode=change.mode,
            in_progress=change.in_progress,
            actor=change.actor,
            at=change.at,
            runs=change.runs,
        )
    )


def changes(conn: Connection, function_id: str, limit: int = MAX_CHANGES) -> list[PauseChange]:
    """The function's latest changes, newest first."""
    table = function_pause_changes
    query = (
        select(table).where(table.c.function_id == function_id).order_by(table.c.id.desc())
    ).limit(limit)
    return [_change(row) for row in conn.execute(query)]
