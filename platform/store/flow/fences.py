"""Fencing tokens of concurrency keys with limit 1: every claim of a call under such a key
makes a new holder, which takes the key's next number in the claim's transaction (on
PostgreSQL the claimer holds the key's lock then, so numbers follow claim order). A call whose
lease ran out and was claimed again thus carries a lower token than its successor."""

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection
from sqlalchemy.dialects import postgresql, sqlite
from weir.platform.store.engine.fast import Fast
from weir.platform.store.engine.schema import fences


def _next_statement(dialect: Any) -> Any:
    counters = dialect.insert(fences)
    return counters.on_conflict_do_update(
        index_elements=[fences.c.scope], set_={"value": fences.c.value + 1}
    ).returning(fences.c.value)


# Run on the cursor (`Fast`): a key with limit 1 takes a token at every claim.
_NEXT = {
    "sqlite": Fast(_next_statement(sqlite), ("scope", "value")),
    "postgresql": Fast(_next_statement(postgresql), ("scope", "value")),
}


def take(conn: Connection, scopes: Sequence[str]) -> dict[str, int]:
    """The next token of each scope (a concurrency key hash), by scope."""
    statement = _NEXT[conn.dialect.name]
    return {scope: int(statement.scalar(conn, {"scope": scope, "value": 1})) for scope in scopes}
