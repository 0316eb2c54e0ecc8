"""waits: the index by event name also orders by kind, so an event's matching skips invokes

A finished run's `inngest/function.finished` event is matched against the waits on its name:
every parent waiting for an invoked run keeps an invoke wait under that name, resolved by its
correlation id, never by matching. Read by (event name, created_at) alone, each finished run
walked every such wait: 1,000 parents in flight made each end cost 1,000 rows. With the kind
in the index, matching reads only waits and cancel-on subscriptions.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-04 17:30:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.drop_index("ix_waits_event", table_name="waits")
    op.create_index("ix_waits_event", "waits", ["event_name", "kind", "created_at"])


def downgrade() -> None:
    op.drop_index("ix_waits_event", table_name="waits")
    op.create_index("ix_waits_event", "waits", ["event_name", "created_at"])
