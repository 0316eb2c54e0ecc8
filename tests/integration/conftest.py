"""Fixtures: for each SDK, a Weir server and an app serving the same functions."""

from collections.abc import Iterator

import pytest

from tests.integration.harness import AppServer, WeirServer

SDKS = {
    "weir": "tests.integration.apps.weir_app",
    "inngest": "tests.integration.apps.inngest_app",
}


@pytest.fixture(scope="module", params=sorted(SDKS))
def sdk(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def weir_server(sdk: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[WeirServer]:
    server = WeirServer(tmp_path_factory.mktemp(f"weir-{sdk}"))
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
