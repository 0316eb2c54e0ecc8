"""Every kind of evaluation on a hostile event is bounded: trigger `if`, keys, batch `if`,
priority, cancel `if` and wait `if`. The costly evaluation fails only that event's admission
(or match) with a reason naming the budget; nothing half-done is left, and the next ordinary
event is served as before."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from weir.expressions import Budget, configure_budget
from weir.expressions._pool import POOL
from weir.platform.functions import (
    Batching,
    CancelOn,
    ConcurrencyLimit,
    EventTrigger,
    RateLimit,
    Throttle,
)
from weir.platform.runtime.steps import waits

from tests.support.flow_harness import EVENT, NOON, Harness, config, warnings

S = 1000
MIB = 1024 * 1024
OVER = "expression_over_budget"
# Each passes every shape limit; on a 3 MiB list each runs for seconds to minutes.
FILTER = "event.data.items.filter(i, i > 0).size() > 0"
STRINGS = 'event.data.items.map(i, string(i) + "-" + string(i)).size()'


@pytest.fixture(autouse=True)
def small_budget() -> Iterator[None]:
    budget = Budget(time_ms=300, memory_bytes=512 * MIB, result_bytes=64 * 1024, workers=2)
    previous = configure_budget(budget)
    assert POOL.wait_until_ready(budget)
    yield
    configure_budget(previous)


def hostile() -> dict[str, Any]:
    return {"items": [1] * (3 * MIB // 2)}  # ~3 MiB as JSON


def small() -> dict[str, Any]:
    return {"items": [1, 2, 3]}


def refusals(h: Harness) -> list[str]:
    return [str(row.detail) for row in h.outcomes(OVER)]


def test_a_costly_trigger_if_refuses_only_that_event(database_url: str) -> None:
    cfg = replace(config(), triggers=(EventTrigger(EVENT, FILTER),))
    h = Harness(database_url, cfg)
    h.send(NOON, hostile())
    assert h.runs() == []
    (detail,) = refusals(h)
    assert "trigger" in detail and "exceeded its cost budget of 300 ms" in detail
    h.send(NOON + 1, small())
    assert len(h.runs()) == 1


def test_a_costly_key_refuses_the_run_instead_of_sharing_the_empty_key(database_url: str) -> None:
    limit = ConcurrencyLimit(1, STRINGS, "fn")
    h = Harness(database_url, config(concurrency=(limit,)))
    h.send(NOON, hostile())
    assert h.runs() == []
    (detail,) = refusals(h)
    assert "budget" in detail
    h.send(NOON + 1, small())
    (run,) = h.runs()
    assert warnings(run) == []


def test_a_refused_event_leaves_no_gate_state_behind(database_url: str) -> None:
    # The rate limit comes first and would spend its budget before the throttle key fails.
    cfg = config(rate_limit=RateLimit(5, 60 * S, None), throttle=Throttle(5, 60 * S, 1, STRINGS))
    h = Harness(database_url, cfg)
    h.send(NOON, hostile())
    assert h.runs() == [] and len(refusals(h)) == 1
    assert h.gate_rows("rate_limit") == []


def test_a_costly_batch_if_refuses_only_that_event(database_url: str) -> None:
    h = Harness(database_url, config(batching=Batching(2, 10 * S, None, FILTER)))
    h.send(NOON, hostile())
    assert "budget" in refusals(h)[0]
    h.send(NOON + 1, small())
    h.send(NOON + 2, small())
    assert len(h.runs()) == 1  # the two ordinary events made one batch


def test_a_costly_priority_refuses_only_that_event(database_url: str) -> None:
    h = Harness(database_url, config(priority_run=STRINGS))
    h.send(NOON, hostile())
    assert h.runs() == [] and len(refusals(h)) == 1
    h.send(NOON + 1, small())
    assert len(h.runs()) == 1


def test_a_costly_cancel_if_does_not_cancel_and_the_next_event_still_can(
    database_url: str,
) -> None:
    cancel = CancelOn("app/cancel", "async.data.items.filter(i, i > 0).size() > 0", None)
    h = Harness(database_url, config(cancel_on=(cancel,)))
    h.send(NOON, small())
    (run,) = h.runs()
    h.send(NOON + 1, hostile(), name="app/cancel")
    assert h.run(run.id).status != "CANCELLED"
    h.send(NOON + 2, small(), name="app/cancel")
    assert h.run(run.id).status == "CANCELLED"


def test_a_costly_wait_if_does_not_resume_and_the_next_event_still_can(database_url: str) -> None:
    h = Harness(database_url, config())
    h.send(NOON, small())
    (run,) = h.runs()
    with h.tx(NOON + 1) as tx:
        expression = "async.data.items.filter(i, i > 0).size() > 0"
        waits.open_wait(tx, run, "step-1", "wait", "app/reply", expression, 60 * S)
    h.send(NOON + 2, hostile(), name="app/reply")
    assert len(h.waits()) == 1
    h.send(NOON + 3, small(), name="app/reply")
    assert h.waits() == []


def test_one_event_holds_the_writer_for_at_most_two_budgets_over_many_functions(
    database_url: str,
) -> None:
    costly = [replace(config(f"fn{i}"), triggers=(EventTrigger(EVENT, FILTER),)) for i in range(4)]
    h = Harness(database_url, *costly)
    h.send(NOON, hostile())
    details = sorted(refusals(h))
    assert len(details) == 4
    assert sum("cost budget of 300 ms" in d for d in details) == 2
    assert sum("total expression budget of 600 ms" in d for d in details) == 2
    h.send(NOON + 1, small())  # another event has its own budget
    assert len(h.runs()) == 4
