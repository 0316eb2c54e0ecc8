"""The synced apps, and how loaded each function is."""

from sqlalchemy import Connection
from weir.platform.records import record
from weir.platform.store import catalog, queries
from weir.platform.store.catalog import App
from weir.platform.store.queries import SlotUse


def apps(conn: Connection) -> list[App]:
    return catalog.list_apps(conn)


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
