"""queue.claimed_at (since when a step executes); runs indexed by correlation and original run

The run page and the APIs say since when a run's step has been executing (the claim's time),
and link an invoking parent to its child and a run to its reruns, both looked up by index.

Revision ID: 0008
Revises: 0005
Create Date: 2026-12-03 09:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("queue", schema=None) as batch_op:
        batch_op.add_column(sa.Column("claimed_at", sa.BigInteger(), nullable=True))
    with op.batch_alter_table("runs", schema=None) as batch_op:
        # Partial: nearly every run has neither, and a full index whose one value is NULL is
        # one the planner rightly ignores (then each lookup walks every run).
        for name, column in (("ix_runs_correlation", "correlation_id"),
                             ("ix_runs_original", "original_run_id")):
            where = sa.text(f"{column} IS NOT NULL")
            batch_op.create_index(
                name, [column], unique=False, sqlite_where=where, postgresql_where=where
            )


def downgrade() -> None:
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_index("ix_runs_original")
        batch_op.drop_index("ix_runs_correlation")
    with op.batch_alter_table("queue", schema=None) as batch_op:
        batch_op.drop_column("claimed_at")
