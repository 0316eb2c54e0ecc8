"""The platform's HTTP API in-process (FastAPI's TestClient), on a fresh database: every test
taking `client` runs once on SQLite and once on PostgreSQL (tests/conftest.py)."""

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from weir.app import create_app
from weir.platform.settings import Settings

from tests.api.helpers import LOCAL
from tests.support.migrated import migrate


@pytest.fixture
def client(database_url: str) -> Iterator[TestClient]:
    migrate(database_url)  # Weir's own upgrade at start then finds nothing to do
    settings = Settings(database_url=database_url, sqlite_synchronous="OFF")
    with TestClient(create_app(settings), base_url=LOCAL) as test_client:
        yield test_client
