"""queue, lanes, slots, fences: fewer pages written by each claim and each end of a call

Every page a transaction changes is written whole to the WAL at its commit, so an index that
changes with no purpose costs a page:
- `queue.dedupe` was UNIQUE, and the index held the NULL of every item without a dedupe: each
  claim (which clears the dedupe) and each end of an item rewrote it. Now a unique index holds
  only the items that have one.
- `ix_lanes_blocked_on` held every lane's NULL and was rewritten by each claim that set a lane
  unparked; it now holds parked lanes only.
- On SQLite `lanes`, `slots` and `fences` are stored by their keys (WITHOUT ROWID): a new or
  ended lane, a slot taken or freed and a fence raised write one b-tree, not a table and the
  index of its key.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-04 12:50:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_HAS_DEDUPE = sa.text("dedupe IS NOT NULL")
_PARKED = sa.text("blocked_on IS NOT NULL")
_UNIQUE = {"uq": "uq_%(table_name)s_%(column_0_name)s"}  # names SQLite's unnamed UNIQUE


def _lanes_columns() -> list[sa.Column[sa.Any]]:
    return [
        sa.Column("lane", sa.String(64), primary_key=True),
        sa.Column("next_at", sa.BigInteger(), nullable=False),
        sa.Column("head_score", sa.BigInteger(), nullable=False),
        sa.Column("blocked_on", sa.String(64), nullable=True),
        sa.Column("limits", sa.Text(), nullable=False, server_default="[]"),
        sa.Column("function_id", sa.String(32), nullable=True),
    ]


def _slots_columns() -> list[sa.Column[sa.Any]]:
    return [
        sa.Column("key_hash", sa.String(64), primary_key=True),
        sa.Column("item_id", sa.Integer(), primary_key=True),
        sa.Column("expires_at", sa.BigInteger(), nullable=False),
    ]


def _fences_columns() -> list[sa.Column[sa.Any]]:
    return [
        sa.Column("scope", sa.String(64), primary_key=True),
        sa.Column("value", sa.BigInteger(), nullable=False),
    ]


_KEYED = {"lanes": _lanes_columns, "slots": _slots_columns, "fences": _fences_columns}


def upgrade() -> None:
    sqlite = op.get_bind().dialect.name == "sqlite"
    if sqlite:
        with op.batch_alter_table("queue", naming_convention=_UNIQUE) as batch:
            batch.drop_constraint("uq_queue_dedupe", type_="unique")
    else:
        op.drop_constraint("queue_dedupe_key", "queue", type_="unique")
    _dedupe_index()
    op.drop_index("ix_lanes_blocked_on", table_name="lanes")
    if sqlite:
        for table, columns in _KEYED.items():
            _rebuild(table, columns(), with_rowid=False)
        _lanes_indexes()  # dropped with the old table
    op.create_index("ix_lanes_blocked_on", "lanes", ["blocked_on"], **_where(_PARKED))


def downgrade() -> None:
    sqlite = op.get_bind().dialect.name == "sqlite"
    op.drop_index("ix_lanes_blocked_on", table_name="lanes")
    if sqlite:
        for table, columns in _KEYED.items():
            _rebuild(table, columns(), with_rowid=True)
        _lanes_indexes()
    op.create_index("ix_lanes_blocked_on", "lanes", ["blocked_on"])
    op.drop_index("ux_queue_dedupe", table_name="queue")
    if sqlite:
        with op.batch_alter_table("queue", naming_convention=_UNIQUE) as batch:
            batch.create_unique_constraint("uq_queue_dedupe", ["dedupe"])
    else:
        op.create_unique_constraint("queue_dedupe_key", "queue", ["dedupe"])


def _dedupe_index() -> None:
    op.create_index("ux_queue_dedupe", "queue", ["dedupe"], unique=True, **_where(_HAS_DEDUPE))


def _where(clause: sa.TextClause) -> dict[str, sa.TextClause]:
    return {"sqlite_where": clause, "postgresql_where": clause}


def _lanes_indexes() -> None:
    op.create_index("ix_lanes_next", "lanes", ["next_at", "head_score"])
    op.create_index("ix_lanes_score", "lanes", ["head_score", "next_at", "lane"])


def _rebuild(table: str, columns: list[sa.Column[sa.Any]], *, with_rowid: bool) -> None:
    """SQLite only: the table again, its rows kept, stored by rowid or by its key."""
    names = ", ".join(column.name for column in columns)
    op.create_table(f"_new_{table}", *columns, sqlite_with_rowid=with_rowid)
    op.execute(f"INSERT INTO _new_{table} ({names}) SELECT {names} FROM {table}")
    op.drop_table(table)
    op.rename_table(f"_new_{table}", table)
