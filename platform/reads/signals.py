"""Signal deliveries as the API shows them: which run received a signal, and its reply."""

from sqlalchemy import Connection
from weir.platform.store.records import signals as signal_records
from weir.platform.store.records.signals import Delivery

__all__ = ["Delivery", "delivery", "waiting"]


def waiting(conn: Connection, signal: str) -> bool:
    """Whether a run waits on `signal` now."""
    return signal_records.signal_wait(conn, signal) is not None


def delivery(conn: Connection, delivery_id: str) -> Delivery | None:
    return signal_records.get_delivery(conn, delivery_id)
