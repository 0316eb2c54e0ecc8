"""Run keys: the 24 h keys of idempotency and event-id deduplication, one holder each."""

import hashlib

from sqlalchemy import Connection, bindparam, select, update
from sqlalchemy.dialects import postgresql, sqlite
from weir.platform.store.engine.fast import Fast
from weir.platform.store.engine.schema import run_keys

RUN_KEY_MAX = 128  # run_keys.key's width

_RUN_KEY = Fast(
    select(run_keys.c.run_id, run_keys.c.expires_at).where(
        run_keys.c.function_id == bindparam("b_fn"), run_keys.c.key == bindparam("b_key")
    )
)
_COLUMNS = ("function_id", "key", "run_id", "expires_at")
# A key nobody holds yet (the usual case) is taken by this one statement.
_TAKE_NEW_KEY = {
    "sqlite": Fast(
        sqlite.insert(run_keys).on_conflict_do_nothing().returning(run_keys.c.run_id), _COLUMNS
    ),
    "postgresql": Fast(
        postgresql.insert(run_keys).on_conflict_do_nothing().returning(run_keys.c.run_id),
        _COLUMNS,
    ),
}
_RENEW_RUN_KEY = (
    update(run_keys)
    .where(run_keys.c.function_id == bindparam("b_fn"), run_keys.c.key == bindparam("b_key"))
    .values(run_id=bindparam("b_run"), expires_at=bindparam("b_expires"))
)


def _stored_key(key: str) -> str:
    """Run keys fit their column (and an index entry) at any length: long ones are hashed."""
    if len(key) <= RUN_KEY_MAX:
        return key
    return "sha256:" + hashlib.sha256(key.encode()).hexdigest()


def run_key_holder(conn: Connection, function_id: str, key: str, now: int) -> str | None:
    row = _RUN_KEY.first(conn, {"b_fn": function_id, "b_key": _stored_key(key)})
    return str(row.run_id) if row is not None and row.expires_at > now else None


def claim_run_key(
    conn: Connection, function_id: str, key: str, run_id: str, now: int, ttl_ms: int
) -> str | None:
    """Take a 24 h run key; returns the run that already holds it, or None if now ours.
    (Two processes inserting one key at once: the loser's job reruns, see database.py.)"""
    stored, expires = _stored_key(key), now + ttl_ms
    new = {"function_id": function_id, "key": stored, "run_id": run_id, "expires_at": expires}
    if _TAKE_NEW_KEY[conn.dialect.name].first(conn, new) is not None:
        return None
    params = {"b_fn": function_id, "b_key": stored, "b_run": run_id, "b_expires": expires}
    row = _RUN_KEY.first(conn, params)
    if row is not None and row.expires_at > now:
        return str(row.run_id)
    conn.execute(_RENEW_RUN_KEY, params)  # an expired holder's key
    return None
