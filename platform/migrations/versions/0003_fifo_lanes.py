"""FIFO lanes: fifo_lanes (holder, fencing counter), fifo_members (the runs queued behind), and
fences (the fencing counters of concurrency keys with limit 1)

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-03 09:10:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "fifo_lanes",
        sa.Column("lane", sa.String(length=64), nullable=False),
        sa.Column("key", sa.Text(), server_default="", nullable=False),
        sa.Column("holder", sa.String(length=32), nullable=True),
        sa.Column("fence", sa.BigInteger(), server_default="0", nullable=False),
        sa.Column("next_seq", sa.BigInteger(), server_default="0", nullable=False),
        sa.PrimaryKeyConstraint("lane"),
    )
    op.create_table(
        "fifo_members",
        sa.Column("lane", sa.String(length=64), nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("run_id", sa.String(length=32), nullable=False),
        sa.Column("start_at", sa.BigInteger(), nullable=False),
        sa.Column("payload", sa.Text(), server_default="{}", nullable=False),
        sa.PrimaryKeyConstraint("lane", "seq"),
    )
    with op.batch_alter_table("fifo_members", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_fifo_members_run_id"), ["run_id"], unique=False)
    op.create_table(
        "fences",
        sa.Column("scope", sa.String(length=64), nullable=False),
        sa.Column("value", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("scope"),
    )


def downgrade() -> None:
    op.drop_table("fences")
    with op.batch_alter_table("fifo_members", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_fifo_members_run_id"))
    op.drop_table("fifo_members")
    op.drop_table("fifo_lanes")
