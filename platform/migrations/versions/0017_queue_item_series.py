"""queue.series: how many calls a queue row has carried before its current one

A run's next call may take the row of the call just answered (`queue.enqueue_in_place`), so a
row's id no longer names one retry series alone: the job id sent with a call is the row's id
and this number.

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-05 01:50:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("queue", sa.Column("series", sa.Integer(), nullable=False, server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("queue") as batch:
        batch.drop_column("series")
