"""strict rolling windows: rolling_scopes (a header per scope) and rolling_log

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-03 09:10:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "rolling_scopes",
        sa.Column("scope_hash", sa.String(length=64), nullable=False),
        sa.Column("count", sa.BigInteger(), nullable=False),
        sa.Column("last_at", sa.BigInteger(), nullable=False),
        sa.Column("line_end", sa.BigInteger(), nullable=False),
        sa.Column("line_score", sa.BigInteger(), nullable=False),
        sa.Column("line_id", sa.BigInteger(), nullable=False),
        sa.Column("expires_at", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("scope_hash"),
    )
    with op.batch_alter_table("rolling_scopes", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_rolling_scopes_expires_at"), ["expires_at"], unique=False
        )
    op.create_table(
        "rolling_log",
        sa.Column("scope_hash", sa.String(length=64), nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("at_ms", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("scope_hash", "seq"),
    )
    with op.batch_alter_table("rolling_log", schema=None) as batch_op:
        batch_op.create_index("ix_rolling_log_at", ["scope_hash", "at_ms"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("rolling_log", schema=None) as batch_op:
        batch_op.drop_index("ix_rolling_log_at")
    op.drop_table("rolling_log")
    with op.batch_alter_table("rolling_scopes", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_rolling_scopes_expires_at"))
    op.drop_table("rolling_scopes")
