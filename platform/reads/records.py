"""The store's immutable records, as the read models hand them out."""

from weir.platform.store.flow.capacity import Capacity, Change
from weir.platform.store.records.catalog import App
from weir.platform.store.records.events import Outcome, StoredEvent
from weir.platform.store.records.runs import Run
from weir.platform.store.records.steps import CallOp, HistoryEntry, Step
from weir.platform.store.views.queries import EventPage, EventRun, RunPage, SlotUse
from weir.platform.store.views.run_facts import RunLink
from weir.platform.store.views.stats import StoreStats

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
