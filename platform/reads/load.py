"""What is synced and how loaded it is: the apps, each function's backlog and slots in use, and
the store's own gauges (whether it answers, queue depths) for health and /metrics."""

from sqlalchemy import Connection
from weir.platform.foundation.record_type import record
from weir.platform.store.records import catalog
from weir.platform.store.records.catalog import App
from weir.platform.store.views import queries, stats
from weir.platform.store.views.queries import SlotUse
from weir.platform.store.views.stats import StoreStats

apps = catalog.list_apps  # the synced apps, by name


@record
class FunctionLoad:
    """What the functions page shows beside each function's config."""

    backlog: dict[str, int]  # function id -> queued calls
    slots: list[SlotUse]  # concurrency slots in use
    apps: list[App]

    def slots_of(self, function_id: str) -> list[SlotUse]:
        return [s for s in self.slots if s.function_id == function_id]


def function_load(conn: Connection, now: int) -> FunctionLoad:
    return FunctionLoad(
        queries.backlog_by_function(conn), queries.slots_in_use(conn, now), catalog.list_apps(conn)
    )


store_answers = stats.ping  # a trivial query: raises when the store does not answer


def store_stats(conn: Connection, now: int) -> StoreStats:
    """The gauges /metrics reports: queue depths, outcomes, waiting runs."""
    return stats.snapshot(conn, now)
