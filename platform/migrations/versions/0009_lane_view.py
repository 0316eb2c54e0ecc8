"""fifo_lanes: whose lanes they are, since when the holder holds, how many runs wait

The lane view (GET /v1/lanes, `weir lanes`, the function page) lists a function's busy lanes
through a partial index and reads each lane's queue length from a counter kept by the joins
and leaves, so a lane with 100,000 runs in line is never counted row by row.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-03 12:20:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("fifo_lanes", schema=None) as batch_op:
        batch_op.add_column(sa.Column("scope", sa.Text(), server_default="", nullable=False))
        batch_op.add_column(sa.Column("held_since", sa.BigInteger(), nullable=True))
        batch_op.add_column(sa.Column("queued", sa.BigInteger(), server_default="0", nullable=False))
    # Lanes made before this revision: their line is counted once here; whose they are is not
    # recorded anywhere, so they list with an empty scope until their next run joins.
    op.execute(
        "UPDATE fifo_lanes SET queued = "
        "(SELECT count(*) FROM fifo_members WHERE fifo_members.lane = fifo_lanes.lane)"
    )
    with op.batch_alter_table("fifo_lanes", schema=None) as batch_op:
        where = sa.text("holder IS NOT NULL")
        batch_op.create_index(
            "ix_fifo_lanes_busy",
            ["scope", "lane"],
            unique=False,
            sqlite_where=where,
            postgresql_where=where,
        )


def downgrade() -> None:
    with op.batch_alter_table("fifo_lanes", schema=None) as batch_op:
        batch_op.drop_index("ix_fifo_lanes_busy")
        batch_op.drop_column("queued")
        batch_op.drop_column("held_since")
        batch_op.drop_column("scope")
