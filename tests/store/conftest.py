"""The `store` fixture: a freshly migrated database behind `weir.platform.store.Database`.

Every test in this folder runs once per backend. SQLite (a file in the test's tmp dir) always
runs; PostgreSQL runs when WEIR_TEST_POSTGRES_URL names a server the tests may create schemas
in, e.g. postgresql+psycopg://postgres@127.0.0.1:5432/postgres. Each PostgreSQL test gets its
own schema (dropped afterwards), so the database itself is left as it was.
"""

from collections.abc import Iterator
from pathlib import Path

import pytest
from store_kit import Store
from weir.platform.store.database import Database, make_engine
from weir.platform.store.migrate import upgrade

from tests.integration.postgres import fresh_schema

BACKENDS = [
    pytest.param("sqlite", id="sqlite"),
    pytest.param("postgresql", id="postgresql", marks=pytest.mark.postgres),
]


@pytest.fixture
def database_url(tmp_path: Path, backend: str) -> Iterator[str]:
    """A URL naming an empty database (SQLite file, or a PostgreSQL schema of its own)."""
    if backend == "sqlite":
        yield f"sqlite:///{tmp_path / 'store.db'}"
        return
    with fresh_schema() as url:
        yield url


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def store(database_url: str) -> Iterator[Store]:
    engine = make_engine(database_url)
    upgrade(engine)
    db = Database(engine)
    try:
        yield Store(database_url, engine, db)
    finally:
        db.close()
