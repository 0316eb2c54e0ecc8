"""Call states read in the claiming transaction are kept by lease, not by queue row: a run's
next call may take the row of the call before it (`queue.enqueue_in_place`), and SQLite may
give a new row the id of one deleted, so a state kept for one lease never serves another."""

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from weir.platform.executor import driver as driver_module
from weir.platform.executor.driver import Driver
from weir.platform.store import queue as q

from tests.support.store_kit import claimed_call


def call(token: str) -> q.Claimed:
    return claimed_call("run-1", token, item_id=7)


@dataclass
class Stub:
    run: str  # which read made it
    memos: tuple[()] = ()


class Reads:
    """The driver's database, for reads only: each read runs its work on no connection."""

    def __init__(self) -> None:
        self.count = 0

    async def read(self, work: Callable[[Any], Any]) -> Any:
        self.count += 1
        return work(None)


@pytest.fixture
def made(monkeypatch: pytest.MonkeyPatch) -> tuple[Driver, Reads]:
    monkeypatch.setattr(driver_module.run_records, "get_runs", lambda conn, ids: {})
    states = iter([Stub("read at the claim"), Stub("read afresh")])
    monkeypatch.setattr(driver_module, "load_call_state", lambda *args: next(states))
    reads = Reads()
    driver = Driver(reads, None, None, lambda: None)  # type: ignore[arg-type]
    monkeypatch.setattr(driver.memos, "keep", lambda run, memos: None)  # stub states
    return driver, reads


def state(made: Driver, item: q.Claimed) -> str:
    return str(asyncio.run(made._state(item)).run)  # type: ignore[misc, union-attr]


def test_a_state_read_at_the_claim_serves_that_lease_once(made: tuple[Driver, Reads]) -> None:
    driver, reads = made
    driver.prefetch(None, [call("lease-1")])  # type: ignore[arg-type]
    assert state(driver, call("lease-1")) == "read at the claim" and reads.count == 0
    assert state(driver, call("lease-1")) == "read afresh" and reads.count == 1


def test_a_new_lease_on_the_same_row_reads_its_own_state(made: tuple[Driver, Reads]) -> None:
    driver, reads = made
    driver.prefetch(None, [call("lease-1")])  # type: ignore[arg-type]
    # e.g. the claim was handed back, and the row later leased again for the run's next call
    assert state(driver, call("lease-2")) == "read afresh" and reads.count == 1
