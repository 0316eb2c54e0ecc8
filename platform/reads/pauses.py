"""A function's paused state and the audit of its pauses, for the API and the UI."""

from sqlalchemy import Connection
from weir.platform.foundation.record_type import record
from weir.platform.store.records import pauses
from weir.platform.store.records.pauses import FunctionPause, PauseChange

__all__ = ["FunctionPause", "PauseChange", "PauseView", "pause_view"]


@record
class PauseView:
    pause: FunctionPause | None  # None: not paused
    changes: list[PauseChange]  # newest first


def pause_view(conn: Connection, function_id: str) -> PauseView:
    found = pauses.paused_of(conn, {function_id}).get(function_id)
    return PauseView(found, pauses.changes(conn, function_id))
