"""Named store operations that flow-control gates need beyond gate_state rows."""

from sqlalchemy import Connection, func, select
from weir.platform.store.schema import queue


def in_flight_until(conn: Connection, run_id: str) -> int | None:
    """When the latest lease on the run's claimed items ends; None if nothing is in flight."""
    query = select(func.max(queue.c.available_at)).where(
        queue.c.run_id == run_id, queue.c.lease_owner.is_not(None), queue.c.kind == "exec"
    )
    value = conn.execute(query).scalar()
    return None if value is None else int(value)
