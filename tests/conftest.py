"""Fixtures for every folder: `backend` and `database_url`, which run a test once on SQLite
and once on PostgreSQL (see tests.support.backends)."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.backends import BACKENDS, empty_database


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def database_url(backend: str, tmp_path: Path) -> Iterator[str]:
    """An empty database (SQLite file, or a PostgreSQL schema of its own) on `backend`."""
    with empty_database(backend, tmp_path) as url:
        yield url
