"""The trigger events of runs waiting in FIFO lanes, kept apart from the others: bounded,
the first kept when full, gone once the run is called or has ended."""

from typing import Any

import pytest
from weir.platform.executor import driver as driver_module
from weir.platform.executor.driver import Driver


def events(n: int) -> list[dict[str, Any]]:
    return [{"name": "t/go", "data": {"n": n}}]


@pytest.fixture
def made() -> Driver:
    return Driver(None, None, None, lambda: None)  # type: ignore[arg-type]


def test_when_full_the_first_runs_in_line_stay_kept(
    made: Driver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(driver_module, "HELD_CACHED", 3)
    made.remember_events({}, {f"r{n}": events(n) for n in range(5)})
    assert [made._held.get(f"r{n}") for n in range(5)] == [
        events(0),
        events(1),
        events(2),
        None,  # the line's front is what the next handovers need: the tail waits its turn
        None,
    ]


def test_a_run_leaves_the_held_events_once_called_or_ended(made: Driver) -> None:
    held = {"called": events(1), "ended": events(2), "large": [b"{}"]}
    made.remember_events({}, held)  # type: ignore[arg-type]
    assert "large" not in made._held  # a large event is sent as canonical bytes: read back
    made._keep_events("called", events(1))  # its first call: kept with the others from now
    assert made.known_events("called") == events(1) and "called" not in made._held
    made.forget_held("ended")
    assert made._held == {}
