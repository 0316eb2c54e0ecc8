"""FIFO lanes keep a row only while busy; their fences come from a store-wide counter

A lane's row used to outlive its runs, to keep its fence counter: one row for every lane value
ever used. Now the last run to leave a lane deletes its row, and a lane taken again gets a
fence above every earlier one from a counter: on SQLite the `fences` row 'fifo-lanes', on
PostgreSQL the sequence `fifo_lane_fences`. The upgrade starts the counter at the highest fence
given so far and deletes the idle lanes' rows.

Older versions keep a lane's fence in its row and count on the row staying: stop them before
the first process at 0018 starts (docs/operations.md). Going back below 0018 keeps the busy
lanes, but a lane that is idle at that moment starts its fences again at 1 when it is next
taken (its old row is gone).

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-05 06:40:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

COUNTER = "fifo-lanes"  # store/flow/fifo_lanes.py's LANE_COUNTER
SEQUENCE = "fifo_lane_fences"  # store/engine/schema.py's FIFO_FENCES


def upgrade() -> None:
    bind = op.get_bind()
    top = int(bind.execute(sa.text("SELECT COALESCE(MAX(fence), 0) FROM fifo_lanes")).scalar_one())
    if bind.dialect.name == "postgresql":
        sequence = sa.Sequence(SEQUENCE, start=top + 1, cache=1)  # see schema.FIFO_FENCES
        op.execute(sa.schema.CreateSequence(sequence))
    elif top > 0:
        insert = "INSERT INTO fences (scope, value) VALUES (:scope, :value)"
        bind.execute(sa.text(insert), {"scope": COUNTER, "value": top})
    idle = (
        "DELETE FROM fifo_lanes WHERE holder IS NULL AND NOT EXISTS"
        " (SELECT 1 FROM fifo_members m WHERE m.lane = fifo_lanes.lane)"
    )
    op.execute(sa.text(idle))


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(sa.schema.DropSequence(sa.Sequence(SEQUENCE)))
    delete = sa.text("DELETE FROM fences WHERE scope = :scope").bindparams(scope=COUNTER)
    op.execute(delete)
