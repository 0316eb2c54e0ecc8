"""Singleton wired into admission: skip records the holder, cancel replaces it, the lock lives
for the whole run and is released when it ends, per key, across restarts."""

from __future__ import annotations

from weir.platform.functions import Debounce, Singleton
from weir.platform.store.flow import gate_state

from tests.support.flow_harness import NOON, Harness, config, event_ids

S = 1000


def single(database_url: str, mode: str = "skip", key: str | None = None) -> Harness:
    return Harness(database_url, config(singleton=Singleton(mode, key)))  # type: ignore[arg-type]


def test_skip_records_the_holder_and_starts_nothing(database_url: str) -> None:
    h = single(database_url, "skip")
    h.send(NOON)
    late = h.send(NOON + S)
    (holder,) = h.runs()
    (skip,) = h.outcomes("singleton_skipped")
    assert skip.event_id == late and skip.run_id == holder.id
    assert f"run {holder.id} is already active" in skip.detail


def test_the_lock_is_held_through_sleeps_and_released_at_the_end(database_url: str) -> None:
    h = single(database_url, "skip")
    h.send(NOON)
    (holder,) = h.runs()
    h.mark_started(holder.id, NOON + 1)  # running, then sleeping: still the holder
    h.send(NOON + 10 * S)
    assert len(h.runs()) == 1
    h.finish(holder.id, NOON + 20 * S)
    assert h.gate_rows("singleton") == []
    after = h.send(NOON + 21 * S)
    assert event_ids(h.runs()[-1]) == [after]


def test_cancel_mode_cancels_the_holder_and_the_new_run_goes_ahead(database_url: str) -> None:
    h = single(database_url, "cancel")
    h.send(NOON)
    newest = h.send(NOON + S)
    old, new = h.runs()
    assert old.status == "CANCELLED" and "singleton: replaced by run" in old.output["message"]
    assert new.status == "QUEUED" and event_ids(new) == [newest]
    assert h.gate_rows("singleton") == [{"run_id": new.id, "key": ""}]


def test_keys_do_not_block_each_other(database_url: str) -> None:
    h = single(database_url, "skip", key="event.data.user")
    h.send(NOON, {"user": "a"})
    h.send(NOON + 1, {"user": "b"})
    h.send(NOON + 2, {"user": "a"})
    assert len(h.runs()) == 2
    assert "(key 'a')" in h.outcomes("singleton_skipped")[0].detail


def test_a_restart_keeps_the_lock(database_url: str) -> None:
    h = single(database_url, "skip")
    h.send(NOON)
    h.restart()
    h.send(NOON + S)
    assert len(h.runs()) == 1 and len(h.outcomes("singleton_skipped")) == 1


def test_a_lock_left_by_an_ended_run_is_free(database_url: str) -> None:
    h = single(database_url, "skip")
    h.send(NOON)
    (holder,) = h.runs()
    lock = h.gate_rows("singleton")[0]
    h.finish(holder.id, NOON + 1)
    with h.tx(NOON + 2) as tx:  # as if the release had been lost
        key_hash = holder.keys["singleton"]["hash"]
        gate_state.save(tx.conn, "singleton", key_hash, lock, None)
    h.send(NOON + 3)
    assert len(h.runs()) == 2


def test_a_debounced_run_meets_the_singleton_when_it_fires(database_url: str) -> None:
    options = {"singleton": Singleton("skip", None), "debounce": Debounce(2 * S, None, None)}
    h = Harness(database_url, config(**options))  # type: ignore[arg-type]
    h.send(NOON)
    h.advance(NOON + 2 * S)
    h.send(NOON + 3 * S)
    h.advance(NOON + 5 * S)  # fires while the first run still holds the key
    assert len(h.runs()) == 1
    assert len(h.outcomes("singleton_skipped")) == 1
