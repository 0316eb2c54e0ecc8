"""Event-id deduplication (runtime/flow/event_id.py): one run per function per event id in
24 h, whether the id was the sender's or Weir's own."""

from __future__ import annotations

from sqlalchemy import func, select
from weir.platform.functions.config import Batching
from weir.platform.store.engine.schema import run_keys

from tests.support.flow_harness import NOON, Harness, config, event_ids

DAY = 24 * 3600 * 1000


def keys_stored(h: Harness) -> int:
    with h.engine.begin() as conn:
        return int(conn.execute(select(func.count()).select_from(run_keys)).scalar_one())


def test_an_event_resent_under_weirs_own_id_starts_no_second_run(database_url: str) -> None:
    h = Harness(database_url)
    first = h.send(NOON, {"n": 1})
    again = h.send(NOON + 1000, {"n": 1}, user_id=first)
    (run,) = h.runs()
    assert event_ids(run) == [first]
    (dup,) = h.outcomes("duplicate_event_id")
    assert dup.event_id == again and dup.run_id == run.id


def test_weirs_own_id_dedupes_per_function_and_for_a_day(database_url: str) -> None:
    h = Harness(database_url, config("a"), config("b"))
    first = h.send(NOON, {})
    assert len(h.runs()) == 2  # one run of each function
    h.send(NOON + 1, {}, user_id=first)
    assert len(h.runs()) == 2 and len(h.outcomes("duplicate_event_id")) == 2
    late = h.send(NOON + DAY + 1, {}, user_id=first)
    assert [event_ids(r) for r in h.runs()[2:]] == [[late], [late]]


def test_a_batched_event_leaves_its_id_free(database_url: str) -> None:
    # A batch run is its own identity: its events' ids start no dedup window.
    h = Harness(database_url, config(batching=Batching(2, 1000, None, None)))
    first = h.send(NOON, {})
    h.advance(NOON + 2000)
    h.send(NOON + 3000, {}, user_id=first)
    h.advance(NOON + 5000)
    assert len(h.runs()) == 2
    assert h.outcomes("duplicate_event_id") == []


def test_a_sender_id_still_takes_its_key(database_url: str) -> None:
    h = Harness(database_url)
    h.send(NOON, {}, user_id="order-7")
    h.send(NOON + 1, {}, user_id="order-7")
    assert len(h.runs()) == 1 and keys_stored(h) == 1
    assert len(h.outcomes("duplicate_event_id")) == 1


def test_an_id_weir_gave_an_event_the_sender_named_is_not_that_events_id(
    database_url: str,
) -> None:
    # The first event went by the sender's id; the id Weir stored it under is another one.
    h = Harness(database_url)
    stored = h.send(NOON, {}, user_id="order-1")
    again = h.send(NOON + 1, {}, user_id=stored)
    assert [event_ids(r) for r in h.runs()] == [[stored], [again]]
    assert h.outcomes("duplicate_event_id") == []
