"""Debounce wired into admission: windows per key in gate_state, the timer item that starts the
run with the last event, timeout caps, keys, restarts and the gates a fired run skips."""

from __future__ import annotations

from weir.platform.functions import Debounce, RateLimit
from weir.platform.ingest.validate import IncomingEvent
from weir.platform.runtime import events

from tests.support.flow_harness import NOON, Harness, config, event_ids, warnings

S = 1000


def debounced(
    database_url: str, period: int = 5 * S, key: str | None = None, timeout: int | None = None
) -> Harness:
    return Harness(database_url, config(debounce=Debounce(period, key, timeout)))


def test_a_burst_becomes_one_run_with_the_last_event_period_after_it(database_url: str) -> None:
    h = debounced(database_url)
    sent = [h.send(NOON + i * S) for i in range(3)]
    assert h.runs() == []
    assert [r.event_id for r in h.outcomes("debounced")] == sent
    assert "debounce: collecting events until 12:00:07.000" in h.outcomes()[-1].detail
    h.advance(NOON + 7 * S - 1)
    assert h.runs() == []
    h.advance(NOON + 7 * S)
    (run,) = h.runs()
    assert run.created_at == NOON + 7 * S
    assert event_ids(run) == [sent[-1]]
    assert h.gate_rows("debounce") == []


def test_one_timer_item_serves_a_whole_burst(database_url: str) -> None:
    h = debounced(database_url)
    for i in range(20):
        h.send(NOON + i * 100)
    assert len(h.queued("debounce")) == 1


def test_the_timeout_caps_a_window_that_keeps_restarting(database_url: str) -> None:
    h = debounced(database_url, period=5 * S, timeout=8 * S)
    for i in range(6):  # every 2 s: each restart pushes the end out, the timeout pulls it in
        h.send(NOON + 2 * i * S)
    runs = h.runs()
    assert [r.created_at for r in runs] == [NOON + 8 * S]
    h.advance(NOON + 20 * S)
    assert [r.created_at for r in h.runs()] == [NOON + 8 * S, NOON + 15 * S]


def test_the_latest_ts_wins_not_the_latest_arrival(database_url: str) -> None:
    h = debounced(database_url)
    newest = h.send(NOON, ts=NOON + 500)
    h.send(NOON + S, ts=NOON)  # older ts: restarts the window, is not delivered
    h.advance(NOON + 6 * S)
    (run,) = h.runs()
    assert event_ids(run) == [newest]
    assert run.created_at == NOON + 6 * S


def test_the_next_event_after_the_run_opens_a_new_window(database_url: str) -> None:
    h = debounced(database_url, period=2 * S)
    first = h.send(NOON)
    h.advance(NOON + 2 * S)
    second = h.send(NOON + 2 * S + 1)
    h.advance(NOON + 10 * S)
    assert [event_ids(r) for r in h.runs()] == [[first], [second]]
    assert [r.created_at for r in h.runs()] == [NOON + 2 * S, NOON + 4 * S + 1]


def test_an_event_finding_the_window_due_starts_it_before_its_timer(database_url: str) -> None:
    h = debounced(database_url, period=2 * S)
    first = h.send(NOON)
    with h.tx(NOON + 3 * S) as tx:  # the scheduler lags: the timer has not run yet
        second = events.accept(tx, [IncomingEvent("app/go", {}, None, NOON + 3 * S, {}, None)])[0]
    (run,) = h.runs()
    assert event_ids(run) == [first] and run.created_at == NOON + 3 * S
    assert len(h.queued("debounce")) == 1  # only the new window's timer is left
    h.advance(NOON + 10 * S)
    assert [event_ids(r) for r in h.runs()] == [[first], [second]]


def test_keys_interleave_with_their_own_windows(database_url: str) -> None:
    h = debounced(database_url, period=3 * S, key="event.data.user")
    a1 = h.send(NOON, {"user": "a"})
    b1 = h.send(NOON + S, {"user": "b"})
    a2 = h.send(NOON + 2 * S, {"user": "a"})
    h.advance(NOON + 10 * S)
    fired = {event_ids(r)[0]: r.created_at for r in h.runs()}
    assert fired == {b1: NOON + 4 * S, a2: NOON + 5 * S}
    assert a1 not in fired


def test_a_restart_mid_window_fires_from_the_stored_window(database_url: str) -> None:
    h = debounced(database_url, period=5 * S)
    h.send(NOON)
    h.restart()
    last = h.send(NOON + 2 * S)
    h.restart()
    h.advance(NOON + 7 * S)
    (run,) = h.runs()
    assert event_ids(run) == [last] and run.created_at == NOON + 7 * S


def test_a_fired_run_does_not_pay_the_rate_limit_twice(database_url: str) -> None:
    options = {"debounce": Debounce(2 * S, None, None), "rate_limit": RateLimit(1, 60 * S, None)}
    h = Harness(database_url, config(**options))  # type: ignore[arg-type]
    kept = h.send(NOON)
    dropped = h.send(NOON + S)  # over the rate limit: never reaches the window
    h.advance(NOON + 5 * S)
    (run,) = h.runs()
    assert event_ids(run) == [kept]
    assert [r.event_id for r in h.outcomes("rate_limited")] == [dropped]


def test_a_failing_key_debounces_in_the_empty_key_and_warns(database_url: str) -> None:
    h = debounced(database_url, period=2 * S, key="event.data.user.id")
    h.send(NOON, {})
    last = h.send(NOON + 1, {"user": 5})  # `.id` of a number fails too: same bucket
    h.advance(NOON + 5 * S)
    (run,) = h.runs()
    assert event_ids(run) == [last]
    assert any(w.startswith("debounce: key expression") for w in warnings(run))
