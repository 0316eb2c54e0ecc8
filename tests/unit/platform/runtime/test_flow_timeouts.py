"""Start/finish timeouts and cancel-on subscriptions set up when a run is created."""

from __future__ import annotations

from weir.platform.functions import CancelOn, Throttle, Timeouts

from tests.support.flow_harness import NOON, Harness, config

S = 1000


def timed(database_url: str, start: int | None = None, finish: int | None = None) -> Harness:
    return Harness(database_url, config(timeouts=Timeouts(start, finish)))


def test_a_run_not_started_by_the_start_deadline_is_cancelled(database_url: str) -> None:
    options = {"timeouts": Timeouts(5 * S, None), "throttle": Throttle(1, 60 * S, 0, None)}
    h = Harness(database_url, config(**options))  # type: ignore[arg-type]
    h.burst(NOON, [{}, {}])  # the second waits 60 s for its throttle slot
    h.advance(NOON + 5 * S - 1)
    assert [r.status for r in h.runs()] == ["QUEUED", "QUEUED"]
    h.mark_started(h.runs()[0].id, NOON + 1)
    h.advance(NOON + 5 * S)
    first, second = h.runs()
    assert first.status == "RUNNING"
    assert second.status == "CANCELLED" and second.ended_at == NOON + 5 * S
    assert "timeouts.start: deadline 12:00:05.000 passed" in second.output["message"]
    assert all(item.run_id != second.id for item in h.queued("exec"))  # its start went too


def test_a_first_call_in_flight_at_the_start_deadline_is_not_cancelled(database_url: str) -> None:
    h = timed(database_url, start=5 * S)
    h.send(NOON)
    h.advance(NOON + 5 * S)  # claimed at NOON: the call is under way, its result not in yet
    (run,) = h.runs()
    assert run.status == "QUEUED"
    (timer,) = h.queued("run_timeout")
    assert timer.available_at > NOON + 5 * S  # looks again when the call's lease ends


def test_a_run_still_going_at_the_finish_deadline_is_cancelled(database_url: str) -> None:
    h = timed(database_url, finish=10 * S)
    h.send(NOON)
    (run,) = h.runs()
    h.advance(NOON + 3 * S)
    h.mark_started(run.id, NOON + 3 * S)  # finish counts from the first step, not creation
    h.advance(NOON + 13 * S - 1)
    assert h.run(run.id).status == "RUNNING"
    h.advance(NOON + 13 * S)
    ended = h.run(run.id)
    assert ended.status == "CANCELLED" and ended.ended_at == NOON + 13 * S
    assert "timeouts.finish" in ended.output["message"]


def test_timers_of_a_run_that_ends_in_time_go_with_it(database_url: str) -> None:
    h = timed(database_url, start=5 * S, finish=10 * S)
    h.send(NOON)
    (run,) = h.runs()
    h.mark_started(run.id, NOON + 1)
    h.finish(run.id, NOON + 2 * S)
    assert h.queued("run_timeout") == []
    h.advance(NOON + 60 * S)
    assert h.run(run.id).status == "COMPLETED"


def cancellable(database_url: str, entry: CancelOn) -> Harness:
    return Harness(database_url, config(cancel_on=(entry,)))


def test_a_matching_later_event_cancels_the_run(database_url: str) -> None:
    match = "event.data.order == async.data.order"
    h = cancellable(database_url, CancelOn("app/cancel", match, None))
    h.send(NOON, {"order": 1})
    h.send(NOON + S, {"order": 2}, name="app/cancel")  # no match
    assert h.runs()[0].status == "QUEUED"
    h.send(NOON + 2 * S, {"order": 1}, name="app/cancel")
    (run,) = h.runs()
    assert run.status == "CANCELLED" and "app/cancel" in run.output["message"]


def test_cancel_on_expires_after_its_timeout(database_url: str) -> None:
    h = cancellable(database_url, CancelOn("app/cancel", None, 5 * S))
    h.send(NOON)
    (subscription,) = h.waits()
    assert subscription.kind == "cancel" and subscription.expires_at == NOON + 5 * S
    h.send(NOON + 6 * S, name="app/cancel")
    assert h.runs()[0].status == "QUEUED"


def test_a_run_is_never_cancelled_by_its_own_trigger(database_url: str) -> None:
    h = Harness(database_url, config(cancel_on=(CancelOn("app/go", None, None),)))
    h.send(NOON)  # its own trigger has the cancel event's name: it never cancels itself
    assert h.runs()[0].status == "QUEUED"
    h.send(NOON + S)  # a later one cancels the first run, and starts its own
    first, second = h.runs()
    assert first.status == "CANCELLED" and second.status == "QUEUED"
