"""The path from an accepted event to its first call waits for nothing it need not: the call
is under way before the event's answer is built, and the event route takes no thread hop."""

import asyncio
import inspect
import json
import threading
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from fastapi.routing import APIRoute
from weir.platform.api import events as event_api
from weir.platform.ingest.validate import parse_body
from weir.platform.runtime import events
from weir.platform.runtime.tx import Tx
from weir.platform.service import Platform
from weir.platform.store.records import runs as run_records

from tests.support.loopback_app import platform_with_app


@pytest.fixture
async def weir(tmp_path: Path) -> AsyncIterator[Platform]:
    async with platform_with_app(tmp_path) as (platform, _):
        yield platform


async def test_an_events_first_call_is_under_way_when_the_event_is_acknowledged(
    weir: Platform,
) -> None:
    for _ in range(3):  # the first with a new connection to the app, then over a kept one
        [event_id] = await weir.send_events(json.dumps({"name": "t/go", "data": {}}).encode())
        # read without yielding to the loop: what is under way now started before the answer
        [run] = weir.db.read_sync(lambda c, e=event_id: run_records.runs_for_event(c, e))
        assert weir.driver.calling(run.id)
        await asyncio.sleep(0.05)  # the run completes; the connection stays open


async def one_group(weir: Platform, *jobs: Callable[[Tx], Any]) -> list[Any]:
    """Run `jobs` in one group of the writer (held by a blocker until all are queued): each
    one's result or exception, delivered once the whole group has run."""
    gate = threading.Event()
    blocker = asyncio.ensure_future(weir.write(lambda _: gate.wait(10)))
    await asyncio.sleep(0.05)  # the writer holds the blocker
    queued = [asyncio.ensure_future(weir.write(job)) for job in jobs]
    await asyncio.sleep(0)  # each task has queued its job behind the blocker
    gate.set()
    await blocker
    return await asyncio.gather(*queued, return_exceptions=True)


def creating(made: list[str], n: int) -> Callable[[Tx], None]:
    """A job accepting one event of `t/go`; the run it makes is added to `made` (by the
    writer thread, inside the job)."""
    incoming = parse_body(json.dumps({"name": "t/go", "data": {"n": n}}).encode(), 0)

    def create(tx: Tx) -> None:
        events.accept(tx, incoming)
        made.extend(tx.trigger_events)

    return create


async def test_a_runs_events_are_known_to_the_next_write_before_its_creator_resumes(
    weir: Platform,
) -> None:
    # The writer takes the next job (the next event batch, whose claim may take these runs'
    # first calls) right after this one, before the coroutine that sent this one resumes:
    # the runs' events must be known to the executor by then.
    made: list[str] = []
    _, seen = await one_group(weir, creating(made, 1), lambda _: weir.driver.known_events(made[0]))
    assert seen is not None and seen[0]["data"] == {"n": 1}


class Fatal(BaseException):
    """Not an Exception: escapes its job's savepoint and rolls back the whole group."""


async def test_the_events_of_runs_whose_creation_rolled_back_are_let_go(weir: Platform) -> None:
    made: list[str] = []

    def fatal(_: Tx) -> None:
        raise Fatal("the group does not commit")

    outcomes = await one_group(weir, creating(made, 2), fatal)
    assert all(isinstance(outcome, Fatal) for outcome in outcomes)
    assert made and weir.driver.known_events(made[0]) is None
    assert weir.db.read_sync(lambda c: run_records.get_run(c, made[0])) is None


def test_the_event_route_has_no_dependency_run_on_the_thread_pool() -> None:
    # FastAPI runs a plain `def` dependency through its thread pool: a thread hop before the
    # route. The event route's are coroutine functions.
    [route] = [r for r in event_api.router.routes if isinstance(r, APIRoute)]
    assert route.path == "/e/{event_key}"
    calls = [dep.call for dep in route.dependant.dependencies]
    assert calls
    assert all(inspect.iscoroutinefunction(call) for call in calls)
