"""The core execution tests again, with Weir on PostgreSQL instead of SQLite.

Only Weir's own SDK: the two SDKs' differences are covered on SQLite, while this module checks
the store underneath (claims, leases, gate state, LISTEN/NOTIFY wake-ups) with real runs.
"""

from collections.abc import Iterator

import pytest

from tests.integration import test_execution as core
from tests.integration.harness import WeirServer
from tests.support.postgres import fresh_schema

pytestmark = [pytest.mark.integration, pytest.mark.postgres]

# The very same test functions, collected a second time in this module with its fixtures.
globals().update({name: fn for name, fn in vars(core).items() if name.startswith("test_")})


@pytest.fixture(scope="module")
def sdk() -> str:
    return "weir"


@pytest.fixture(scope="module")
def weir_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WeirServer]:
    with fresh_schema() as url:
        server = WeirServer(tmp_path_factory.mktemp("weir-pg"), database_url=url)
        server.start()
        yield server
        server.stop()
