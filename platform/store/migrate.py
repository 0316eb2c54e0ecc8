"""Apply Alembic migrations programmatically, as `weir dev` and `weir start` do at boot."""

from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, text

MIGRATIONS = Path(__file__).resolve().parent.parent / "migrations"
PG_MIGRATION_LOCK = 0x57454952  # "WEIR": one process migrates, the others wait on this lock


def alembic_config() -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    return config


def upgrade(engine: Engine) -> None:
    config = alembic_config()
    with engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": PG_MIGRATION_LOCK})
        config.attributes["connection"] = conn
        command.upgrade(config, "head")
