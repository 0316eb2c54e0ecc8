"""Whether the store answers, and the gauges /metrics reports."""

from sqlalchemy import Connection
from weir.platform.store import stats
from weir.platform.store.stats import StoreStats


def store_answers(conn: Connection) -> int:
    """A trivial query: raises when the store does not answer."""
    return stats.ping(conn)


def store_stats(conn: Connection, now: int) -> StoreStats:
    """The gauges /metrics reports: queue depths, outcomes, waiting runs."""
    return stats.snapshot(conn, now)
