"""The few places where PostgreSQL needs more than the shared SQL: row-free locks and wake-ups.

Every function here is a no-op (or trivially true) on SQLite, whose single writer already
serializes every transaction, so the store's operations keep one code path for both backends.
Locks are transaction-scoped advisory locks: they vanish at commit or rollback (also of the
savepoint that took them), so a crashed process can never leave one behind.
"""

from sqlalchemy import Connection, text

# Advisory-lock namespaces (the first of the two int4 keys), so equal names never collide.
SLOT_KEY = 0x5701  # a concurrency key: counting its slots and taking one
GATE_KEY = 0x5702  # a gate_state row, also before its first insert
WAKE = "weir_wake"  # NOTIFY channel: due work was queued or a slot freed
CATALOG = "weir_catalog"  # NOTIFY channel: a sync changed the functions


def is_postgres(conn: Connection) -> bool:
    return conn.dialect.name == "postgresql"


def lock(conn: Connection, namespace: int, name: str) -> None:
    """Wait for, then hold until the transaction ends, the lock on `name`."""
    if is_postgres(conn):
        conn.execute(
            text("SELECT pg_advisory_xact_lock(:ns, hashtext(:name))"),
            {"ns": namespace, "name": name},
        )


def try_lock(conn: Connection, namespace: int, name: str) -> bool:
    """Take the lock on `name` if nobody holds it; False (without waiting) otherwise."""
    if not is_postgres(conn):
        return True
    taken = conn.execute(
        text("SELECT pg_try_advisory_xact_lock(:ns, hashtext(:name))"),
        {"ns": namespace, "name": name},
    ).scalar_one()
    return bool(taken)


def notify(conn: Connection, channel: str) -> None:
    """Tell every listening process, once this transaction commits (PostgreSQL folds equal
    notifications of one transaction into one, so a group commit sends each channel once)."""
    if is_postgres(conn):
        conn.execute(text("SELECT pg_notify(:channel, '')"), {"channel": channel})
