"""signals: one waiting run per signal name, and the deliveries that keep the run's answer

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-08 00:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0021"
down_revision: str | None = "0020"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("waits", schema=None) as batch_op:
        batch_op.create_index(
            "ux_waits_signal",
            ["event_name"],
            unique=True,
            sqlite_where=sa.text("kind = 'signal'"),
            postgresql_where=sa.text("kind = 'signal'"),
        )
    op.create_table(
        "signal_deliveries",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("signal", sa.String(length=512), nullable=False),
        sa.Column("run_id", sa.String(length=32), nullable=False),
        sa.Column("step_id", sa.String(length=64), nullable=False),
        sa.Column("delivered_at", sa.BigInteger(), nullable=False),
        sa.Column("answer", sa.Text(), nullable=True),
        sa.Column("answered_at", sa.BigInteger(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("signal_deliveries", schema=None) as batch_op:
        batch_op.create_index("ix_signal_deliveries_run_id", ["run_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("signal_deliveries", schema=None) as batch_op:
        batch_op.drop_index("ix_signal_deliveries_run_id")
    op.drop_table("signal_deliveries")
    with op.batch_alter_table("waits", schema=None) as batch_op:
        batch_op.drop_index("ux_waits_signal")
