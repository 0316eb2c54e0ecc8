"""Concurrency scopes and their live capacities as people see them: why a run waits for a
slot, and every capacity with its drift and how many slots it has in use."""

from typing import Any

from sqlalchemy import Connection
from weir.platform.foundation.record_type import record
from weir.platform.foundation.vocabulary import GateName
from weir.platform.store import queue as q
from weir.platform.store.flow import capacity
from weir.platform.store.flow.capacity import Capacity, Change
from weir.platform.store.records.runs import Run


def scope_wait(conn: Connection, run: Run, now: int) -> dict[str, Any] | None:
    """Why an unfinished run waits for a slot: its lane is parked on a full key. Derived when
    read, so waiting costs the claim nothing (the lane is parked once, not each of its runs)."""
    if run.ended:
        return None
    key = q.parked_on(conn, run.lane)
    if key is None:
        return None
    slot = next(
        (v for v in run.keys.values() if isinstance(v, dict) and v.get("hash") == key), None
    )
    if slot is None:
        return None
    limit = q.SlotLimit(key, int(slot.get("limit", 0)), str(slot.get("capacity", "")))
    size, used = q.size_and_use(conn, limit, now)
    scope = str(slot.get("scope", "concurrency"))
    shown = f", key {slot['key']!r}" if slot.get("key") else ""
    words = f"{GateName.CONCURRENCY}: waiting for a slot of {scope}{shown}: {used} of {size} in use"
    return {
        "gate": GateName.CONCURRENCY,
        "key": str(slot.get("key", "")),
        "until_ms": None,
        "words": words,
        "scope": scope,
        "in_use": used,
        "capacity": size,
    }


@record
class CapacityView:
    capacity: Capacity
    changes: list[Change]


def capacities(conn: Connection) -> list[Capacity]:
    return capacity.list_capacities(conn)


def capacity_view(conn: Connection, ident: str) -> CapacityView | None:
    found = capacity.find_any(conn, ident)
    if found is None:
        return None
    return CapacityView(found, capacity.changes(conn, found.kind, found.id))
