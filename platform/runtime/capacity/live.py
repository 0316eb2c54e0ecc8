"""Operators changing live capacities: `weir capacity set|reset`, the API and the UI. A
capacity is a concurrency limit's slots or a rate meter's authorizations per window."""

from weir.platform.foundation.record_type import record
from weir.platform.foundation.vocabulary import CapacityKind
from weir.platform.gates import rolling_window as rw
from weir.platform.runtime.tx import Tx
from weir.platform.store.flow import capacity
from weir.platform.store.flow.capacity import Capacity, RevisionConflict

__all__ = ["Capacity", "CapacityNotFound", "CapacityOutOfRange", "RevisionConflict", "change"]
MAX_CAPACITY = 1_000_000  # far beyond any sensible number of slots; keeps typos out
MAX_REVISION = 2**63 - 1  # what SQLite's integer holds (PostgreSQL only compares it in Python)
MAX_ACTOR = 200


class CapacityNotFound(LookupError):
    pass


class CapacityOutOfRange(ValueError):
    """The size is past what this kind of capacity allows (a meter: its window's bound)."""


MAXIMUM = {CapacityKind.CONCURRENCY: MAX_CAPACITY, CapacityKind.METER: rw.MAX_LIMIT}


@record
class Request:
    """`size` None: back to the declared value (reset)."""

    ident: str  # the capacity's name or id
    size: int | None
    expected_revision: int
    actor: str


def _int_within(value: object, most: int) -> bool:
    """An integer (not a boolean) from 1 to `most`."""
    return type(value) is int and 1 <= value <= most


def check(size: object, revision: object, *, needs_size: bool) -> str | None:
    """What is wrong with the input, saying what is allowed; None when it is fine."""
    if needs_size and not _int_within(size, MAX_CAPACITY):
        return f"capacity must be an integer from 1 to {MAX_CAPACITY}, got {size!r}"
    if not _int_within(revision, MAX_REVISION):
        return (
            f"revision must be the integer revision you read (1 to {MAX_REVISION}), got "
            f"{revision!r}: the change applies only if nobody changed the capacity meanwhile"
        )
    return None


def change(tx: Tx, req: Request) -> Capacity:
    """Set or reset; raises CapacityNotFound or RevisionConflict (nothing changes then)."""
    found = capacity.find_any(tx.conn, req.ident)
    if found is None:
        raise CapacityNotFound(f"no capacity named {req.ident!r} (see `weir capacity list`)")
    most = MAXIMUM[found.kind]
    if req.size is not None and req.size > most:
        raise CapacityOutOfRange(
            f"capacity of {found.name!r} must be an integer from 1 to {most} "
            f"(a {found.kind} capacity), got {req.size}"
        )
    actor = req.actor[:MAX_ACTOR]
    done = capacity.set_capacity(
        tx.conn, found.kind, found.id, req.size, req.expected_revision, actor, tx.now
    )
    if done is None:  # removed meanwhile: capacities are never deleted, so this cannot happen
        raise CapacityNotFound(f"no capacity named {req.ident!r}")
    tx.enqueued += 1  # parked lanes may have been woken: the scheduler looks again
    return done
