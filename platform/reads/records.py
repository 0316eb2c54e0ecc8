"""The store's immutable records, as the read models hand them out."""

from weir.platform.store.capacity import Capacity, Change
from weir.platform.store.catalog import App
from weir.platform.store.event_records import Outcome, StoredEvent
from weir.platform.store.queries import EventPage, EventRun, RunPage, SlotUse
from weir.platform.store.run_facts import RunLink
from weir.platform.store.run_records import Run
from weir.platform.store.stats import StoreStats
from weir.platform.store.step_records import CallOp, HistoryEntry, Step

__all__ = [
    "App",
    "CallOp",
    "Capacity",
    "Change",
    "EventPage",
    "EventRun",
    "HistoryEntry",
    "Outcome",
    "Run",
    "RunLink",
    "RunPage",
    "SlotUse",
    "Step",
    "StoreStats",
    "StoredEvent",
]
