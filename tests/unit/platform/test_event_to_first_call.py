"""The path from an accepted event to its first call waits for nothing it need not: the call
is under way before the event's answer is built, and the event route takes no thread hop."""

import asyncio
import inspect
import json
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.routing import APIRoute
from weir.platform.api import events as event_api
from weir.platform.ingest import parse_body
from weir.platform.runtime import events
from weir.platform.runtime.tx import Tx
from weir.platform.service import Platform
from weir.platform.store import run_records

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


async def test_a_runs_events_are_known_to_the_next_write_before_its_creator_resumes(
    weir: Platform,
) -> None:
    # The writer takes the next job (the next event batch, whose claim may take these runs'
    # first calls) right after this one, before the coroutine that sent this one resumes:
    # the runs' events must be known to the executor by then.
    incoming = parse_body(json.dumps({"name": "t/go", "data": {"n": 1}}).encode(), 0)
    made: list[str] = []  # written by the first job, on the writer thread
    gate = threading.Event()

    def create(tx: Tx) -> None:
        events.accept(tx, incoming)
        made.extend(tx.trigger_events)

    def look(_: Tx) -> list[dict[str, Any]] | None:
        return weir.driver.known_events(made[0])

    blocker = asyncio.ensure_future(weir.write(lambda _: gate.wait(10)))
    await asyncio.sleep(0.05)  # the writer holds the blocker
    first = asyncio.ensure_future(weir.write(create))
    second = asyncio.ensure_future(weir.write(look))
    await asyncio.sleep(0)  # both queued behind it: one group, delivered after both ran
    gate.set()
    await asyncio.gather(blocker, first)
    seen = await second
    assert seen is not None and seen[0]["data"] == {"n": 1}


class Fatal(BaseException):
    """Not an Exception: escapes its job's savepoint and rolls back the whole group."""


async def test_the_events_of_runs_whose_creation_rolled_back_are_let_go(weir: Platform) -> None:
    incoming = parse_body(json.dumps({"name": "t/go", "data": {"n": 2}}).encode(), 0)
    made: list[str] = []
    gate = threading.Event()

    def create(tx: Tx) -> None:
        events.accept(tx, incoming)
        made.extend(tx.trigger_events)

    def fatal(_: Tx) -> None:
        raise Fatal("the group does not commit")

    blocker = asyncio.ensure_future(weir.write(lambda _: gate.wait(10)))
    await asyncio.sleep(0.05)  # the writer holds the blocker
    created = asyncio.ensure_future(weir.write(create))
    failing = asyncio.ensure_future(weir.write(fatal))
    await asyncio.sleep(0)  # both queued behind it: one group, which the second aborts
    gate.set()
    await blocker
    outcomes = await asyncio.gather(created, failing, return_exceptions=True)
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
