"""lanes: the function whose items a lane holds

A scheduler calling an app as much as it may passes over that app's work. It knew that work
only by the lanes it had in flight, so a claim took the app's other lanes (one per key) and
handed them back, over and over. With the function on the lane row, a claim passes over every
lane of the app's functions. Existing lanes take it from their items (empty ones are deleted,
as a claim would); the timers' lane, whose items are of every function, keeps NULL. A lane
created without it by an older process learns it from its next item (`queue._lane_upsert`).

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-04 12:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_BACKFILL = sa.text(
    "UPDATE lanes SET function_id = (SELECT queue.function_id FROM queue"
    " WHERE queue.lane = lanes.lane LIMIT 1) WHERE lanes.lane <> '~timers'"
)
# A lane with no items is only a row a claim would delete; gone now, it cannot come back
# without its function.
_EMPTY = sa.text(
    "DELETE FROM lanes WHERE NOT EXISTS (SELECT 1 FROM queue WHERE queue.lane = lanes.lane)"
)


def upgrade() -> None:
    op.add_column("lanes", sa.Column("function_id", sa.String(32), nullable=True))
    op.execute(_EMPTY)
    op.execute(_BACKFILL)


def downgrade() -> None:
    with op.batch_alter_table("lanes") as batch:
        batch.drop_column("function_id")
