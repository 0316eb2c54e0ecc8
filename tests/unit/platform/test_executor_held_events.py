"""The trigger events of runs waiting in FIFO lanes, kept apart from the others: bounded, the
first kept when full (until they grow stale), gone once the run is called or has ended."""

from typing import Any

import pytest
from weir.platform.executor import driver as driver_module
from weir.platform.executor.driver import HELD_STALE_MS, Driver


class Clock:
    def __init__(self) -> None:
        self.ms = 1_000_000

    def now_ms(self) -> int:
        return self.ms


def events(n: int) -> list[dict[str, Any]]:
    return [{"name": "t/go", "data": {"n": n}}]


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def made(clock: Clock) -> Driver:
    return Driver(None, clock, None, lambda: None)  # type: ignore[arg-type]


def kept(made: Driver, *run_ids: str) -> list[list[dict[str, Any]] | None]:
    return [made._known(run_id) for run_id in run_ids]  # type: ignore[misc]


def test_when_full_the_first_runs_in_line_stay_kept_until_they_grow_stale(
    made: Driver, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(driver_module, "HELD_CACHED", 3)
    made.remember_events({}, {f"r{n}": events(n) for n in range(5)})
    # the line's front is what the next handovers need: the tail waits its turn
    assert kept(made, "r0", "r1", "r2", "r3", "r4") == [events(0), events(1), events(2), None, None]
    clock.ms += HELD_STALE_MS  # e.g. called by another process: never taken here
    made.remember_events({}, {"r5": events(5)})
    assert kept(made, "r0", "r1", "r5") == [None, events(1), events(5)]


def test_a_run_leaves_the_events_once_called_or_ended(made: Driver) -> None:
    held = {"called": events(1), "ended": events(2), "large": [b"{}"]}
    made.remember_events({"running": events(3)}, held)  # type: ignore[arg-type]
    assert kept(made, "large") == [None]  # a large event is sent as canonical bytes: read back
    with made._keeping:
        made._keep_events("called", events(1))  # its first call: kept with the others from now
    assert made.known_events("called") == events(1) and "called" not in made._held
    made.forget(["ended", "running"])  # ended (or their creation did not commit)
    assert kept(made, "ended", "running", "called") == [None, None, events(1)]


def test_a_run_with_no_trigger_events_is_known_to_have_none(made: Driver) -> None:
    made.remember_events({"cron": []}, {"cron-held": []})  # e.g. started by a schedule
    assert kept(made, "cron", "cron-held") == [[], []]  # nothing to read back
