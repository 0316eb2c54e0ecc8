"""live capacities of concurrency scopes (and later meters), and their change log

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-03 09:10:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "capacities",
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("declared", sa.BigInteger(), nullable=False),
        sa.Column("capacity", sa.BigInteger(), nullable=False),
        sa.Column("revision", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.Column("updated_at", sa.BigInteger(), nullable=False),
        sa.Column("updated_by", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("kind", "id"),
    )
    with op.batch_alter_table("capacities", schema=None) as batch_op:
        batch_op.create_index("ix_capacities_name", ["kind", "name"], unique=False)
    op.create_table(
        "capacity_changes",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("capacity_id", sa.String(length=64), nullable=False),
        sa.Column("action", sa.String(length=16), nullable=False),
        sa.Column("old", sa.BigInteger(), nullable=True),
        sa.Column("new", sa.BigInteger(), nullable=False),
        sa.Column("revision", sa.Integer(), nullable=False),
        sa.Column("actor", sa.Text(), nullable=False),
        sa.Column("at", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("capacity_changes", schema=None) as batch_op:
        batch_op.create_index(
            "ix_capacity_changes_of", ["kind", "capacity_id", "id"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("capacity_changes", schema=None) as batch_op:
        batch_op.drop_index("ix_capacity_changes_of")
    op.drop_table("capacity_changes")
    with op.batch_alter_table("capacities", schema=None) as batch_op:
        batch_op.drop_index("ix_capacities_name")
    op.drop_table("capacities")
