"""The two stores Weir runs on, as pytest parameters, and an empty database on either.

SQLite (a file in a directory of the test's) always runs. PostgreSQL runs on the server that
WEIR_TEST_POSTGRES_URL names (`make test` starts one and sets it); without it the PostgreSQL
cases are skipped, saying so (or fail under CI, which always has one). Each PostgreSQL
database is a schema of its own, dropped afterwards, so tests never see each other's rows.
"""

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.support.postgres import fresh_schema

SQLITE = "sqlite"
POSTGRESQL = "postgresql"

BACKENDS = [
    pytest.param(SQLITE, id=SQLITE),
    pytest.param(POSTGRESQL, id=POSTGRESQL, marks=pytest.mark.postgres),
]


@contextmanager
def empty_database(backend: str, directory: Path) -> Iterator[str]:
    """A URL naming an empty database: a new SQLite file in `directory`, or a fresh schema."""
    if backend == SQLITE:
        yield f"sqlite:///{directory / 'weir.db'}"
    elif backend == POSTGRESQL:
        with fresh_schema() as url:
            yield url
    else:
        raise ValueError(f"unknown backend {backend!r}")


# For the few tests about one backend's own behaviour: they still take `database_url`.
ONLY_SQLITE = pytest.mark.parametrize("backend", BACKENDS[:1])
ONLY_POSTGRESQL = pytest.mark.parametrize("backend", BACKENDS[1:])
