"""paused functions and the audit of who paused and resumed them

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-07 23:40:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "function_pauses",
        sa.Column("function_id", sa.String(length=32), nullable=False),
        sa.Column("mode", sa.String(length=16), nullable=True),
        sa.Column("in_progress", sa.String(length=16), nullable=True),
        sa.Column("paused_at", sa.BigInteger(), nullable=True),
        sa.Column("paused_by", sa.Text(), nullable=True),
        sa.Column("changed_at", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("function_id"),
    )
    op.create_table(
        "function_pause_changes",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("function_id", sa.String(length=32), nullable=False),
        sa.Column("action", sa.String(length=16), nullable=False),
        sa.Column("mode", sa.String(length=16), nullable=True),
        sa.Column("in_progress", sa.String(length=16), nullable=True),
        sa.Column("actor", sa.Text(), nullable=False),
        sa.Column("at", sa.BigInteger(), nullable=False),
        sa.Column("runs", sa.Integer(), server_default="0", nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("function_pause_changes", schema=None) as batch_op:
        batch_op.create_index(
            "ix_function_pause_changes_of", ["function_id", "id"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("function_pause_changes", schema=None) as batch_op:
        batch_op.drop_index("ix_function_pause_changes_of")
    op.drop_table("function_pause_changes")
    op.drop_table("function_pauses")
