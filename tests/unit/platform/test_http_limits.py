"""The login back-off's arithmetic and bounds, and the body budget in-process."""

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from weir.app import create_app
from weir.platform.security import lockout
from weir.platform.security.lockout import Lockout
from weir.platform.settings import Settings

from tests.api.helpers import LOCAL

MiB = 1024 * 1024


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000

    def now_ms(self) -> int:
        return self.now

    async def sleep_ms(self, ms: int) -> None:
        self.now += ms


def test_locks_double_up_to_the_cap_and_fade_after_a_quiet_hour() -> None:
    clock = Clock()
    locks = Lockout(clock)
    waits = []
    for _ in range(lockout.ADDRESS.free + 12):
        locks.failed("1.2.3.4", None)
        waits.append(locks.retry_after_s("1.2.3.4", None))
    assert waits[: lockout.ADDRESS.free] == [0] * lockout.ADDRESS.free
    assert waits[lockout.ADDRESS.free : lockout.ADDRESS.free + 3] == [2, 4, 8]
    assert waits[-1] == lockout.ADDRESS.cap_ms // 1000
    clock.now += lockout.ADDRESS.cap_ms + lockout.QUIET_MS + 1
    assert locks.retry_after_s("1.2.3.4", None) == 0
    locks.failed("1.2.3.4", None)
    assert locks.retry_after_s("1.2.3.4", None) == 0  # counting starts afresh


def test_the_table_of_failures_stays_bounded() -> None:
    locks = Lockout(Clock())
    for n in range(lockout.MAX_KEYS + 500):
        locks.failed(f"10.{n // 65536}.{n // 256 % 256}.{n % 256}", "admin")
    assert len(locks.records) <= lockout.MAX_KEYS
    assert locks.retry_after_s("192.0.2.1", "admin") == 0  # guesses elsewhere lock no user
    for _ in range(lockout.LOGIN.free + 1):
        locks.failed("192.0.2.1", "admin")
    assert locks.retry_after_s("192.0.2.1", "admin") == 2  # the newest record is kept
    locks.failed("192.0.2.2", "x" * 60_000)
    assert max(len(key) for key in locks.records) < 300  # a huge guessed name is cut short


@pytest.fixture
def small_budget(tmp_path: Path) -> Iterator[TestClient]:
    settings = Settings(
        database_url=f"sqlite:///{tmp_path}/weir.db",
        sqlite_synchronous="OFF",
        body_budget_bytes=1 * MiB,
    )
    with TestClient(create_app(settings), LOCAL) as client:
        yield client


def test_a_declared_body_larger_than_the_whole_budget_is_a_413(
    small_budget: TestClient,
) -> None:
    json_type = {"content-type": "application/json"}
    declared = small_budget.post("/fn/register", content=b" " * (2 * MiB), headers=json_type)
    assert declared.status_code == 413
    fits = small_budget.post("/fn/register", content=b" " * (MiB // 2), headers=json_type)
    assert fits.status_code == 400  # read in full, then found not to be JSON
