"""Alembic environment: migrates the database named by `-x url=...` or by the caller."""

from alembic import context
from sqlalchemy import Connection
from weir.platform.store.database import make_engine
from weir.platform.store.engine.schema import metadata


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=metadata,
        render_as_batch=connection.dialect.name == "sqlite",  # SQLite alters via table copies
    )
    with context.begin_transaction():
        context.run_migrations()


def run_online() -> None:
    given = context.config.attributes.get("connection")
    if given is not None:
        _run(given)
        return
    url = context.get_x_argument(as_dictionary=True).get("url") or context.config.get_main_option(
        "sqlalchemy.url"
    )
    if not url:
        raise SystemExit(
            "say which database to migrate: alembic -x url=sqlite:///path.db upgrade head"
        )
    engine = make_engine(url)
    with engine.connect() as connection:
        _run(connection)
    engine.dispose()


run_online()
