"""Options are checked at serve(): one error listing every problem of every function."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi import FastAPI
from weir.sdk import (
    Batch,
    Cancel,
    Concurrency,
    Context,
    Debounce,
    InvalidFunctionsError,
    Priority,
    RateLimit,
    Singleton,
    Throttle,
    Timeouts,
    TriggerCron,
    Weir,
    serve,
)


async def handler(ctx: Context) -> None:
    return None


def _problems(**options: Any) -> list[str]:
    weir = Weir("app", dev=True)
    weir.function("f", **options)(handler)
    with pytest.raises(InvalidFunctionsError) as caught:
        serve(FastAPI(), weir)
    return caught.value.problems


def test_valid_function_serves() -> None:
    weir = Weir("app", dev=True)
    weir.function("f", event="app/*", concurrency=2, throttle=Throttle(1, "1s"))(handler)
    serve(FastAPI(), weir)


@pytest.mark.parametrize(
    ("options", "fragment"),
    [
        ({}, "triggers: needs 1 to 10 triggers"),
        ({"expression": "true"}, "expression: needs event="),
        ({"event": ""}, "triggers[0].event: must be a non-empty event name"),
        ({"event": "app/*/x"}, "a wildcard may only end the name"),
        ({"event": "*"}, "a wildcard may only end the name"),
        ({"cron": "* * *"}, "must have 5 fields"),
        ({"cron": "TZ=Mars/Base * * * * *"}, "unknown time zone 'Mars/Base'"),
        ({"triggers": [TriggerCron("* * * * *", jitter="10m")]}, "jitter: must be at most 5m"),
        ({"event": "a", "retries": 21}, "retries: must be an integer from 0 to 20"),
        ({"event": "a", "retries": True}, "retries: must be an integer"),
        ({"event": "a", "concurrency": [Concurrency(1)] * 3}, "concurrency: allows at most 2"),
        ({"event": "a", "concurrency": -1}, "concurrency[0].limit: must be an integer >= 0"),
        ({"event": "a", "concurrency": Concurrency(1, scope="env")}, "key: is required when scope"),
        (
            {"event": "a", "concurrency": Concurrency(1, scope="team")},
            "scope: must be 'fn', 'env' or",
        ),  # type: ignore[arg-type]
        ({"event": "a", "throttle": Throttle(0, "1s")}, "throttle.limit: must be an integer >= 1"),
        ({"event": "a", "throttle": Throttle(1, "1s", burst=-1)}, "throttle.burst"),
        ({"event": "a", "throttle": Throttle(1, "0s")}, "throttle.period: must be at least 1s"),
        (
            {"event": "a", "rate_limit": RateLimit(1, "25h")},
            "rate_limit.period: must be at most 1d",
        ),
        ({"event": "a", "debounce": Debounce("8d")}, "debounce.period: must be at most 1w"),
        ({"event": "a", "debounce": Debounce("1.5s")}, "debounce.period: expected"),
        (
            {"event": "a", "batch_events": Batch(1, "5s")},
            "batch_events.max_size: must be an integer >= 2",
        ),
        ({"event": "a", "priority": Priority("")}, "priority.run"),
        ({"event": "a", "idempotency": " "}, "idempotency: must be a non-empty"),
        (
            {"event": "a", "singleton": Singleton("queue")},
            "singleton.mode: must be 'skip' or 'cancel'",
        ),  # type: ignore[arg-type]
        ({"event": "a", "cancel_on": [Cancel("x")] * 6}, "cancel_on: allows at most 5"),
        ({"event": "a", "cancel_on": Cancel("")}, "cancel_on[0].event"),
        ({"event": "a", "timeouts": Timeouts()}, "timeouts: needs at least one of start or finish"),
        ({"event": "a", "timeouts": Timeouts(start="500ms")}, "timeouts.start"),
        ({"event": "a", "throttle": RateLimit(1, "1s")}, "throttle: must be a Throttle(...)"),
        (
            {"event": "a", "batch_events": Batch(2, "1s"), "debounce": Debounce("1s")},
            "cannot be combined with debounce",
        ),
        ({"event": "a", "on_failure": 5}, "on_failure: must be a function"),
    ],
)
def test_each_problem_is_named(options: dict[str, Any], fragment: str) -> None:
    problems = _problems(**options)
    assert any(fragment in p for p in problems), problems
    assert all(p.startswith("function 'f': ") for p in problems)


def test_every_problem_of_every_function_is_listed_at_once() -> None:
    weir = Weir("app", dev=True)
    weir.function("one", throttle=Throttle(0, "0s"))(handler)
    weir.function("two", event="a", batch_events=Batch(1, "1s"), priority="x")(handler)
    weir.function("two", event="b")(handler)
    with pytest.raises(InvalidFunctionsError) as caught:
        serve(FastAPI(), weir)
    text = str(caught.value)
    for fragment in (
        "function 'one': triggers",
        "function 'one': throttle.limit",
        "function 'one': throttle.period",
        "function 'two': batch_events.max_size",
        "function 'two': batch_events: cannot be combined with priority",
        "'app-two': id: is used by more than one function",
    ):
        assert fragment in text
    assert len(caught.value.problems) == 6


def test_invalid_id_is_reported() -> None:
    weir = Weir("app", dev=True)
    weir.function("has space", event="a")(handler)
    with pytest.raises(InvalidFunctionsError, match="id: must be a non-empty string"):
        serve(FastAPI(), weir)


def test_cancel_match_becomes_an_if_expression() -> None:
    from weir.sdk._declaring.problems import Problems

    sink: list[str] = []
    wire = Cancel("x", match="data.id", if_exp="async.data.ok").to_wire(Problems("f", sink), "c")
    assert wire == {"event": "x", "if": "(event.data.id == async.data.id) && (async.data.ok)"}
    assert sink == []


def test_throttle_burst_defaults_to_zero_on_the_wire() -> None:
    from weir.sdk._declaring.problems import Problems

    wire = Throttle(3, "1m").to_wire(Problems("f", []), "throttle")
    assert wire == {"limit": 3, "period": "1m", "burst": 0}


def test_empty_app_id_is_refused() -> None:
    with pytest.raises(ValueError, match="app_id"):
        Weir("")
