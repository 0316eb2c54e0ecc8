"""Live capacities: stored sizes of limits, created from the code's declared value at first
need and from then on changed only by operators (with an expected revision), never by code.

A new declaration from code only updates `declared`: a capacity that differs from it has
drifted, until an operator sets it (to either value) or resets it to the declared one. Every
change is logged in `capacity_changes` with its actor. Lowering a capacity revokes nothing:
slots held stay held, and new claims wait until the count is under the new size.
"""

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, Row, ScalarSelect, Update, insert, select, update
from weir.platform.foundation.record_type import record
from weir.platform.foundation.vocabulary import CapacityAction, CapacityKind
from weir.platform.store.engine.schema import capacities, capacity_changes
from weir.platform.store.flow import capacity_wake

CODE = "code"  # the actor of changes made by a sync


@record
class Capacity:
    kind: CapacityKind
    id: str
    name: str
    declared: int
    capacity: int
    revision: int
    created_at: int
    updated_at: int
    updated_by: str | None

    @property
    def drift(self) -> bool:
        """The code declares another value than the one in force."""
        return self.declared != self.capacity


@record
class Change:
    action: CapacityAction
    old: int | None
    new: int
    revision: int
    actor: str
    at: int


class RevisionConflict(Exception):
    """The capacity changed since the caller read it; `current` is what it is now."""

    def __init__(self, current: Capacity, expected: int) -> None:
        self.current = current
        super().__init__(
            f"capacity {current.name!r} is at revision {current.revision}, not {expected}: "
            "it changed meanwhile; read it again and retry"
        )


_SIZES = select(capacities.c.id, capacities.c.capacity).where(
    capacities.c.kind == CapacityKind.CONCURRENCY
)


def stored_size(cap_id: Any) -> ScalarSelect[Any]:
    """The stored size of concurrency capacity `cap_id` (a bind parameter) as a value of a
    larger statement: NULL while none is stored."""
    return (
        _SIZES.with_only_columns(capacities.c.capacity)
        .where(capacities.c.id == cap_id)
        .scalar_subquery()
    )


def declare(
    conn: Connection, kind: CapacityKind, cap_id: str, name: str, declared: int, now: int
) -> None:
    """Code declares `declared`: the first time it becomes the capacity; later it is only
    noted (a difference is drift, never applied)."""
    row = _get(conn, kind, cap_id, lock=True)
    if row is None:
        conn.execute(
            insert(capacities).values(
                kind=kind,
                id=cap_id,
                name=name,
                declared=declared,
                capacity=declared,
                revision=1,
                created_at=now,
                updated_at=now,
                updated_by=None,
            )
        )
        _log(conn, kind, cap_id, CapacityAction.CREATED, None, declared, 1, CODE, now)
        return
    if row.declared == declared and row.name == name:
        return
    revision = row.revision + (row.declared != declared)
    conn.execute(_update(kind, cap_id).values(declared=declared, name=name, revision=revision))
    if row.declared != declared:
        _log(
            conn, kind, cap_id, CapacityAction.DECLARED, row.declared, declared, revision, CODE, now
        )


def set_capacity(
    conn: Connection,
    kind: CapacityKind,
    cap_id: str,
    size: int | None,
    expected_revision: int,
    actor: str,
    now: int,
) -> Capacity | None:
    """Set the capacity (`None`: back to the declared value) if it is still at
    `expected_revision`; None if there is no such capacity, RevisionConflict if it moved."""
    if size is not None and size < 1:
        raise ValueError(f"a capacity must be an integer ≥ 1, got {size}")
    row = _get(conn, kind, cap_id, lock=True)
    if row is None:
        return None
    if row.revision != expected_revision:
        raise RevisionConflict(row, expected_revision)
    new = row.declared if size is None else size
    action = CapacityAction.RESET if size is None else CapacityAction.SET
    revision = row.revision + 1
    conn.execute(
        _update(kind, cap_id).values(
            capacity=new, revision=revision, updated_at=now, updated_by=actor
        )
    )
    _log(conn, kind, cap_id, action, row.capacity, new, revision, actor, now)
    if kind == CapacityKind.CONCURRENCY and new > row.capacity:
        capacity_wake.wake_for(conn, cap_id, new, now)  # as many lanes as there is new room
    return _get(conn, kind, cap_id)


def concurrency_sizes(conn: Connection, ids: Sequence[str]) -> dict[str, int]:
    """The stored sizes of concurrency capacities among `ids` (those not stored yet are left
    out: their declared limit holds): what a slot count is shown against."""
    if not ids:
        return {}
    rows = conn.execute(_SIZES.where(capacities.c.id.in_(sorted(set(ids)))))
    return {str(row.id): int(row.capacity) for row in rows}


_METER_SIZES = select(capacities.c.id, capacities.c.capacity).where(
    capacities.c.kind == CapacityKind.METER
)


def meter_sizes(conn: Connection, ids: Sequence[str]) -> dict[str, int]:
    """The stored limits of rate meters among `ids` (those not stored yet are left out)."""
    rows = conn.execute(_METER_SIZES.where(capacities.c.id.in_(list(ids))))
    return {str(row.id): int(row.capacity) for row in rows}


def find_any(conn: Connection, ident: str) -> Capacity | None:
    """By name, else by id, whatever its kind (names and ids differ between kinds)."""
    for kind in CapacityKind:
        found = find(conn, kind, ident)
        if found is not None:
            return found
    return None


def find(conn: Connection, kind: CapacityKind, ident: str) -> Capacity | None:
    """By name, else by id."""
    row = conn.execute(
        select(capacities).where(capacities.c.kind == kind, capacities.c.name == ident)
    ).first()
    return _record(row) if row is not None else _get(conn, kind, ident)


def list_capacities(conn: Connection, kind: CapacityKind | None = None) -> list[Capacity]:
    query = select(capacities).order_by(capacities.c.kind, capacities.c.name)
    if kind is not None:
        query = query.where(capacities.c.kind == kind)
    return [_record(row) for row in conn.execute(query)]


def drifted(conn: Connection) -> list[Capacity]:
    """Capacities whose code declares another value than the one in force."""
    query = select(capacities).where(capacities.c.declared != capacities.c.capacity)
    return [_record(row) for row in conn.execute(query.order_by(capacities.c.name))]


def changes(conn: Connection, kind: CapacityKind, cap_id: str, limit: int = 20) -> list[Change]:
    """The newest changes first."""
    c = capacity_changes.c
    query = (
        select(capacity_changes)
        .where(c.kind == kind, c.capacity_id == cap_id)
        .order_by(c.id.desc())
        .limit(limit)
    )
    return [
        Change(CapacityAction(r.action), r.old, int(r.new), int(r.revision), r.actor, int(r.at))
        for r in conn.execute(query)
    ]


def _get(
    conn: Connection, kind: CapacityKind, cap_id: str, *, lock: bool = False
) -> Capacity | None:
    query = select(capacities).where(capacities.c.kind == kind, capacities.c.id == cap_id)
    row = conn.execute(query.with_for_update() if lock else query).first()
    return None if row is None else _record(row)


def _update(kind: CapacityKind, cap_id: str) -> Update:
    return update(capacities).where(capacities.c.kind == kind, capacities.c.id == cap_id)


def _record(r: Row[Any]) -> Capacity:
    return Capacity(
        kind=CapacityKind(r.kind),
        id=str(r.id),
        name=str(r.name),
        declared=int(r.declared),
        capacity=int(r.capacity),
        revision=int(r.revision),
        created_at=int(r.created_at),
        updated_at=int(r.updated_at),
        updated_by=r.updated_by,
    )


def _log(
    conn: Connection,
    kind: CapacityKind,
    cap_id: str,
    action: CapacityAction,
    old: int | None,
    new: int,
    revision: int,
    actor: str,
    now: int,
) -> None:
    conn.execute(
        insert(capacity_changes).values(
            kind=kind,
            capacity_id=cap_id,
            action=action,
            old=old,
            new=new,
            revision=revision,
            actor=actor,
            at=now,
        )
    )
