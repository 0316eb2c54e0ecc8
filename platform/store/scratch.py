"""A throwaway store: SQLite in memory with the production schema, for what-if runs of the
runtime (the flow-control playground). Nothing in it is ever written to the real store."""

from sqlalchemy import Engine, create_engine
from sqlalchemy.pool import StaticPool
from weir.platform.store.database import _configure_sqlite
from weir.platform.store.engine.schema import metadata


def scratch_engine() -> Engine:
    """One in-memory database on one connection (StaticPool), set up as the real SQLite store
    is; the schema comes from the same table models the migrations are checked against."""
    engine = create_engine("sqlite://", poolclass=StaticPool)
    _configure_sqlite(engine, "OFF")  # nothing to make durable
    metadata.create_all(engine)
    return engine
