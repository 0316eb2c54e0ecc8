"""The runs a bulk action would touch: every active run matching a filter, newest first."""

from sqlalchemy import Connection
from weir.platform.foundation.vocabulary import ENDED, RunStatus
from weir.platform.store.views import queries
from weir.platform.store.views.queries import RunPage

ACTIVE: tuple[RunStatus, ...] = tuple(s for s in RunStatus if s not in ENDED)
MAX_BULK = 10_000  # runs one bulk request may touch; a larger set is asked for again


def active_run_ids(conn: Connection, wanted: RunPage, cap: int = MAX_BULK) -> list[str]:
    """Ids of the runs matching `wanted` that have not ended (its statuses narrowed to the
    active ones), newest first, at most `cap`; the page's cursor and limit are ignored."""
    statuses = tuple(s for s in (wanted.statuses or ACTIVE) if s in ACTIVE)
    if not statuses:
        return []
    return queries.active_run_ids(conn, wanted, statuses, cap)
