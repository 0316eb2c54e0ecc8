"""lanes: an index by head score, for a claim's walk to the first due lanes

Without it a claim reads every due lane and sorts them by head score: with 100,000 lanes due
one claim took 12 ms. Walking this index stops at the first due lanes (store/queue/partitions.py);
the lane's name makes its order total, so that a walk bounded to a number of lanes stays
bounded when many lanes share a head score and a due time.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-03 19:00:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_lanes_score", "lanes", ["head_score", "next_at", "lane"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_lanes_score", table_name="lanes")
