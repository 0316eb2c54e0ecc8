"""events: the index on the sender's id holds only events that carry one

Most events carry no id of their own (every run's `inngest/function.finished` among them);
their NULL entries in the index were one more page written by every commit that stored one.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-04 06:20:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_HAS_ID = sa.text("user_id IS NOT NULL")


def upgrade() -> None:
    op.drop_index("ix_events_user_id", table_name="events")
    op.create_index(
        "ix_events_user_id",
        "events",
        ["user_id"],
        unique=False,
        sqlite_where=_HAS_ID,
        postgresql_where=_HAS_ID,
    )


def downgrade() -> None:
    op.drop_index("ix_events_user_id", table_name="events")
    op.create_index("ix_events_user_id", "events", ["user_id"], unique=False)
