"""Webhook sources and their deliveries as rows. The webhooks room owns what a source's
`config` means; this module only stores it, with a revision for optimistic updates."""

import itertools
from typing import Any

from sqlalchemy import Connection, Row, delete, insert, select, update
from weir.platform.foundation.record_type import record
from weir.platform.store.engine.schema import webhook_deliveries, webhook_sources

KEEP_DELIVERIES = 1000  # per source: the newest are kept, older ones go as new ones arrive
PRUNE_EVERY = 50  # inserts between two prunings, not a second statement per delivery


@record
class StoredSource:
    id: str
    name: str
    config: str  # JSON
    revision: int
    created_at: int
    updated_at: int


@record
class StoredDelivery:
    id: str
    source_id: str
    received_at: int
    status: str
    reason: str | None
    message: str | None
    event_id: str | None
    body: bytes | None
    headers: str | None  # JSON
    query: str | None  # JSON


def _source(row: Row[Any]) -> StoredSource:
    return StoredSource(
        row.id, row.name, row.config, int(row.revision), int(row.created_at), int(row.updated_at)
    )


def _delivery(row: Row[Any]) -> StoredDelivery:
    return StoredDelivery(
        row.id,
        row.source_id,
        int(row.received_at),
        row.status,
        row.reason,
        row.message,
        row.event_id,
        bytes(row.body) if row.body is not None else None,
        row.headers,
        row.query,
    )


def insert_source(conn: Connection, source: StoredSource) -> None:
    conn.execute(insert(webhook_sources).values(**source.__dict__))


def source_by_id(conn: Connection, source_id: str) -> StoredSource | None:
    row = conn.execute(select(webhook_sources).where(webhook_sources.c.id == source_id)).first()
    return _source(row) if row is not None else None


def source(conn: Connection, ident: str) -> StoredSource | None:
    """By id, else by name (operators' routes: never the public one, names are guessable)."""
    for column in (webhook_sources.c.id, webhook_sources.c.name):
        row = conn.execute(select(webhook_sources).where(column == ident)).first()
        if row is not None:
            return _source(row)
    return None


def sources(conn: Connection) -> list[StoredSource]:
    rows = conn.execute(select(webhook_sources).order_by(webhook_sources.c.name))
    return [_source(row) for row in rows]


def update_source(
    conn: Connection, source_id: str, name: str, config: str, revision: int, now: int
) -> bool:
    """Write the new name and config if the row is still at `revision` (then at revision + 1)."""
    done = conn.execute(
        update(webhook_sources)
        .where(webhook_sources.c.id == source_id, webhook_sources.c.revision == revision)
        .values(name=name, config=config, revision=revision + 1, updated_at=now)
    )
    return done.rowcount == 1


def delete_source(conn: Connection, source_id: str) -> bool:
    done = conn.execute(delete(webhook_sources).where(webhook_sources.c.id == source_id))
    conn.execute(delete(webhook_deliveries).where(webhook_deliveries.c.source_id == source_id))
    return done.rowcount == 1


_inserted = itertools.count(1)


def insert_delivery(conn: Connection, delivery: StoredDelivery) -> None:
    """Insert; every PRUNE_EVERY inserts (in this process), drop the source's deliveries past
    its newest KEEP_DELIVERIES: a source holds at most about as many as both."""
    conn.execute(insert(webhook_deliveries).values(**delivery.__dict__))
    if next(_inserted) % PRUNE_EVERY == 0:
        prune(conn, delivery.source_id)


def prune(conn: Connection, source_id: str) -> None:
    oldest_kept = (
        select(webhook_deliveries.c.id)
        .where(webhook_deliveries.c.source_id == source_id)
        .order_by(webhook_deliveries.c.id.desc())
        .offset(KEEP_DELIVERIES - 1)
        .limit(1)
        .scalar_subquery()
    )
    conn.execute(
        delete(webhook_deliveries).where(
            webhook_deliveries.c.source_id == source_id,
            webhook_deliveries.c.id < oldest_kept,
        )
    )


def deliveries(
    conn: Connection,
    source_id: str,
    *,
    status: str | None = None,
    reason: str | None = None,
    before: str | None = None,
    limit: int = 50,
) -> list[StoredDelivery]:
    """Newest first; `before` a delivery id, to page on."""
    query = select(webhook_deliveries).where(webhook_deliveries.c.source_id == source_id)
    if status is not None:
        query = query.where(webhook_deliveries.c.status == status)
    if reason is not None:
        query = query.where(webhook_deliveries.c.reason == reason)
    if before is not None:
        query = query.where(webhook_deliveries.c.id < before)
    rows = conn.execute(query.order_by(webhook_deliveries.c.id.desc()).limit(limit))
    return [_delivery(row) for row in rows]


def delivery(conn: Connection, delivery_id: str) -> StoredDelivery | None:
    row = conn.execute(
        select(webhook_deliveries).where(webhook_deliveries.c.id == delivery_id)
    ).first()
    return _delivery(row) if row is not None else None


def mark_replayed(
    conn: Connection, delivery_id: str, status: str, event_id: str, message: str | None
) -> bool:
    """A refused delivery replayed into an event: only once (False if it no longer is refused)."""
    done = conn.execute(
        update(webhook_deliveries)
        .where(webhook_deliveries.c.id == delivery_id, webhook_deliveries.c.status == "refused")
        .values(status=status, event_id=event_id, message=message)
    )
    return done.rowcount == 1
