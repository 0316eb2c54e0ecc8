"""The `store` fixture: a freshly migrated database behind `weir.platform.store.Database`.

Every test in this folder runs once per backend, through the `database_url` fixture of
tests/conftest.py: SQLite always, PostgreSQL when WEIR_TEST_POSTGRES_URL is set.
"""

from collections.abc import Iterator

import pytest
from weir.platform.store.database import Database, make_engine
from weir.platform.store.migrate import upgrade

from tests.support.store_kit import Store


@pytest.fixture
def store(database_url: str) -> Iterator[Store]:
    engine = make_engine(database_url)
    upgrade(engine)
    db = Database(engine)
    try:
        yield Store(database_url, engine, db)
    finally:
        db.close()
