"""fifo_members: stored by its key on SQLite (WITHOUT ROWID)

A run that joins a busy FIFO lane writes a row here, and the handover that gives it the lane
deletes it. Stored by rowid, each wrote a table page as well as a page of the (lane, seq) key's
index; by its key, that index is the table. The handover's delete reached an old table page,
wherever the run's row was put when it joined.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-04 21:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _columns() -> list[sa.Column[sa.Any]]:
    return [
        sa.Column("lane", sa.String(64), primary_key=True),
        sa.Column("seq", sa.BigInteger(), primary_key=True),
        sa.Column("run_id", sa.String(32), nullable=False),
        sa.Column("start_at", sa.BigInteger(), nullable=False),
        sa.Column("payload", sa.Text(), nullable=False, server_default="{}"),
    ]


def upgrade() -> None:
    _rebuild(with_rowid=False)


def downgrade() -> None:
    _rebuild(with_rowid=True)


def _rebuild(*, with_rowid: bool) -> None:
    """The table again, its rows kept, stored by rowid or by its key (SQLite only: PostgreSQL
    stores every table as a heap)."""
    if op.get_bind().dialect.name != "sqlite":
        return
    names = ", ".join(column.name for column in _columns())
    op.create_table("_new_fifo_members", *_columns(), sqlite_with_rowid=with_rowid)
    op.execute(f"INSERT INTO _new_fifo_members ({names}) SELECT {names} FROM fifo_members")
    op.drop_table("fifo_members")
    op.rename_table("_new_fifo_members", "fifo_members")
    op.create_index("ix_fifo_members_run_id", "fifo_members", ["run_id"])  # dropped with it
