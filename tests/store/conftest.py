"""The `store` fixture: a database at the migrations' head behind `weir.platform.store.Database`;
`engine`: an engine on the test's empty database, for the migration tests to migrate.

Every test in this folder runs once per backend, through the `database_url` fixture of
tests/conftest.py: SQLite always, PostgreSQL when WEIR_TEST_POSTGRES_URL is set.
"""

from collections.abc import Iterator

import pytest
from sqlalchemy import Engine
from weir.platform.store.database import Database, make_engine

from tests.support.migrated import migrate
from tests.support.store_kit import Store


@pytest.fixture
def store(database_url: str) -> Iterator[Store]:
    migrate(database_url)  # as upgrade() would, from a template (tests.support.migrated)
    engine = make_engine(database_url)
    db = Database(engine)
    try:
        yield Store(database_url, engine, db)
    finally:
        db.close()


@pytest.fixture
def engine(database_url: str) -> Iterator[Engine]:
    engine = make_engine(database_url)
    try:
        yield engine
    finally:
        engine.dispose()
