"""Fixtures: for each SDK, a Weir server and an app serving the same functions.

The server runs on SQLite unless the module parametrizes `backend` too, at module scope
(e.g. with harness.SDK_AND_BACKEND); each PostgreSQL server gets a fresh schema.
"""

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.integration.harness import SDKS, AppServer, WeirServer
from tests.support.backends import SQLITE, empty_database


@pytest.fixture(scope="module", params=sorted(SDKS))
def sdk(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def backend() -> str:
    """Real servers are slow to start: a module runs on PostgreSQL too only if it asks."""
    return SQLITE


@pytest.fixture(scope="module")
def weir_server(
    sdk: str, backend: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[WeirServer]:
    tmp = tmp_path_factory.mktemp(f"weir-{sdk}-{backend}")
    with empty_database(backend, tmp) as url:
        server = WeirServer(tmp, database_url=url)
        server.start()
        yield server
        server.stop()


@pytest.fixture(scope="module")
def app(
    sdk: str, weir_server: WeirServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[AppServer]:
    server = AppServer(tmp_path_factory.mktemp(sdk), SDKS[sdk], f"{sdk}app", weir_server.url)
    server.start()
    server.sync()
    yield server
    server.stop()


@contextmanager
def weir_and_app(
    tmp: Path, backend: str, module: str, app_id: str
) -> Iterator[tuple[WeirServer, AppServer]]:
    """A Weir on `backend` (a fresh database) and the app `module` serves, synced to it."""
    with empty_database(backend, tmp) as url:
        weir = WeirServer(tmp, database_url=url)
        app = AppServer(tmp, module, app_id, weir.url)
        try:  # stopped whatever fails, a start included: no server outlives its test
            weir.start()
            app.start()
            app.sync()
            yield weir, app
        finally:
            app.stop()
            weir.stop()
