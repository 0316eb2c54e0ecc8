"""Migrate an empty test database to head without running Alembic for every test.

`weir.platform.store.migrate.upgrade` loads every revision script and walks them one by one:
about a third of a second on SQLite and over a second on PostgreSQL on a busy CI machine,
paid by every store, flow-control and API test. `migrate` reaches the same state from a
template made once per test process by that very `upgrade`:

- SQLite: the template's file is copied over the test's (still absent or empty) file;
- PostgreSQL: the SQL statements `upgrade` sent to an empty schema are recorded once and sent
  again, in one transaction, to the test's empty schema (they name no schema: search_path
  decides where they land).

A database that already holds tables gets the real `upgrade`. Migrations themselves are
tested from scratch in tests/store/test_migrations.py (which also checks that this copy is
exactly what `upgrade` makes) and at every real `weir dev` start of the integration suite.
"""

import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, event, make_url, text
from sqlalchemy.pool import NullPool
from weir.platform.store.database import database_url, is_sqlite, make_engine
from weir.platform.store.migrate import upgrade

from tests.support.postgres import fresh_schema

# (statement, parameters, executemany) as the driver received them
Statement = tuple[str, Any, bool]

_lock = threading.Lock()
_sqlite_template: Path | None = None
_postgres_script: list[Statement] | None = None


def migrate(url: str) -> None:
    """Bring the database `url` names to Alembic's head, as `upgrade` would."""
    url = database_url(url)
    if is_sqlite(url):
        _migrate_sqlite(url)
    else:
        _migrate_postgres(url)


def _migrate_sqlite(url: str) -> None:
    target = Path(str(make_url(url).database))
    if target.exists() and target.stat().st_size > 0:
        _upgrade(url)
        return
    shutil.copyfile(_sqlite_file(), target)


def _sqlite_file() -> Path:
    global _sqlite_template
    with _lock:
        if _sqlite_template is None:
            path = Path(tempfile.mkdtemp(prefix="weir-template-")) / "weir.db"
            _upgrade(f"sqlite:///{path}")  # closing the last connection folds the WAL in
            _sqlite_template = path
        return _sqlite_template


def _migrate_postgres(url: str) -> None:
    engine = create_engine(url, poolclass=NullPool)
    try:
        with engine.connect() as conn:
            tables = conn.execute(
                text(
                    "SELECT count(*) FROM information_schema.tables"
                    " WHERE table_schema = current_schema()"
                )
            ).scalar_one()
        if tables:
            _upgrade(url)
            return
        script = _postgres_statements()
        raw = engine.raw_connection()
        try:
            cursor = raw.cursor()
            for statement, parameters, many in script:
                if many:
                    cursor.executemany(statement, parameters)
                else:
                    cursor.execute(statement, parameters)
            raw.commit()
        finally:
            raw.close()
    finally:
        engine.dispose()


def _postgres_statements() -> list[Statement]:
    global _postgres_script
    with _lock:
        if _postgres_script is None:
            _postgres_script = _record_upgrade()
        return _postgres_script


def _record_upgrade() -> list[Statement]:
    recorded: list[Statement] = []
    with fresh_schema() as url:
        engine = make_engine(url)

        @event.listens_for(engine, "before_cursor_execute")
        def _record(
            _conn: Any, _cursor: Any, statement: str, parameters: Any, _ctx: Any, many: bool
        ) -> None:
            recorded.append((statement, parameters, many))

        try:
            upgrade(engine)
        finally:
            engine.dispose()
    return recorded


def _upgrade(url: str) -> None:
    engine = make_engine(url)
    try:
        upgrade(engine)
    finally:
        engine.dispose()
