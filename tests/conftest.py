"""Fixtures for every folder: `backend` and `database_url`, which run a test once on SQLite
and once on PostgreSQL (see tests.support.backends).

Also how `make test` spreads the suite over pytest-xdist workers (`-n ... --dist loadgroup`):
tests sharing a server started by a module- or session-scoped fixture stay on one worker
(tests.support.grouping), and tests marked `serial` run in a pass of their own after the
parallel one.
"""

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.backends import BACKENDS, empty_database
from tests.support.grouping import slow_folders_first

# its hook marks the groups before xdist reads them (a plugin: a conftest has one such hook)
pytest_plugins = ["tests.support.grouping"]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def database_url(backend: str, tmp_path: Path) -> Iterator[str]:
    """An empty database (SQLite file, or a PostgreSQL schema of its own) on `backend`."""
    with empty_database(backend, tmp_path) as url:
        yield url


@pytest.hookimpl(trylast=True)  # after pytest's own reordering by fixture scope
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get("PYTEST_XDIST_WORKER"):
        slow_folders_first(items)
