"""queue index (lane, available_at) for the claimer's scan; events.user_id as text

An event's `id` has no length limit at ingest, so the column holding it has none either
(PostgreSQL enforces VARCHAR lengths; SQLite never did).

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-02 18:20:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("queue", schema=None) as batch_op:
        batch_op.create_index("ix_queue_lane_due", ["lane", "available_at"], unique=False)
    with op.batch_alter_table("events", schema=None) as batch_op:
        batch_op.alter_column(
            "user_id", existing_type=sa.String(length=512), type_=sa.Text(), existing_nullable=True
        )


def downgrade() -> None:
    with op.batch_alter_table("events", schema=None) as batch_op:
        batch_op.alter_column(
            "user_id", existing_type=sa.Text(), type_=sa.String(length=512), existing_nullable=True
        )
    with op.batch_alter_table("queue", schema=None) as batch_op:
        batch_op.drop_index("ix_queue_lane_due")
