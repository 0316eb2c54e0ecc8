"""Plain-words summaries of options for the UI."""

import pytest
from weir.platform.functions import (
    Batching,
    CancelOn,
    ConcurrencyLimit,
    CronTrigger,
    Debounce,
    EventTrigger,
    FunctionConfig,
    RateLimit,
    Singleton,
    Throttle,
    Timeouts,
)
from weir.platform.functions.describe import (
    describe_batching,
    describe_cancel_on,
    describe_concurrency,
    describe_debounce,
    describe_function,
    describe_idempotency,
    describe_priority,
    describe_rate_limit,
    describe_singleton,
    describe_throttle,
    describe_timeouts,
    describe_trigger,
    format_span,
)


@pytest.mark.parametrize(
    ("ms", "text"),
    [
        (500, "500 ms"),
        (1_000, "1 s"),
        (3_333.3, "3.3 s"),
        (90_000, "1.5 min"),
        (3_600_000, "1 h"),
        (604_800_000, "7 d"),
    ],
)
def test_format_span(ms: float, text: str) -> None:
    assert format_span(ms) == text


def test_throttle_states_the_effective_start_pattern() -> None:
    assert describe_throttle(Throttle(3, 10_000, 0, None)) == (
        "throttle: 1 at once, then 1 every 3.3 s"
    )
    assert describe_throttle(Throttle(2, 6_000, 1, "event.data.user")) == (
        "throttle: 2 at once, then 1 every 3 s per event.data.user"
    )


def test_rate_limit() -> None:
    assert describe_rate_limit(RateLimit(5, 60_000, None)) == (
        "rate limit: up to 5 per 1 min, extra events skipped"
    )


def test_concurrency() -> None:
    assert describe_concurrency(ConcurrencyLimit(5, "event.data.user", "fn")) == (
        "concurrency: 5 steps at once per event.data.user"
    )
    assert describe_concurrency(ConcurrencyLimit(1, "event.data.org", "account")) == (
        "concurrency: 1 step at once per event.data.org, shared across the account"
    )
    assert describe_concurrency(ConcurrencyLimit(0, None, "fn")) == "concurrency: no limit"


def test_debounce_batching_singleton() -> None:
    assert describe_debounce(Debounce(10_000, "event.data.u", 60_000)) == (
        "debounce: runs 10 s after the last event per event.data.u, at most 1 min after the first"
    )
    assert describe_batching(Batching(50, 5_000, None, "event.data.ok")) == (
        "batching: up to 50 events per run, started at most 5 s after the first; "
        "only events where event.data.ok are batched"
    )
    assert describe_singleton(Singleton("skip", None)) == (
        "singleton: one run at a time; new runs are skipped while one is active"
    )
    assert describe_singleton(Singleton("cancel", "event.data.u")) == (
        "singleton: one run at a time per event.data.u; a new run cancels the active one"
    )


def test_priority_idempotency_timeouts_cancel() -> None:
    assert describe_priority("event.data.p") == (
        "priority: runs queue as if created event.data.p seconds earlier (limited to ±600 s)"
    )
    assert describe_idempotency("event.data.id") == (
        "idempotency: one run per event.data.id per 24 h, extra events skipped"
    )
    assert describe_timeouts(Timeouts(30_000, None)) == (
        "timeouts: cancelled if not started within 30 s"
    )
    assert describe_cancel_on(
        CancelOn("app/stop", "async.data.id == event.data.id", 86_400_000)
    ) == (
        "cancel on: app/stop when async.data.id == event.data.id, within 1 d of the run's creation"
    )


def test_triggers() -> None:
    assert describe_trigger(EventTrigger("app/a", None)) == "event: app/a"
    assert describe_trigger(CronTrigger("0 12 * * 1-5", "Europe/Paris", 30_000)) == (
        "cron: 0 12 * * 1-5 (Europe/Paris), up to 30 s late"
    )


def test_a_whole_function() -> None:
    config = FunctionConfig(
        slug="app-f",
        name="f",
        url="http://app/api",
        retries=3,
        triggers=(EventTrigger("app/a", "event.data.ok"),),
        rate_limit=RateLimit(1, 1_000, None),
        idempotency="event.data.id",  # replaces the rate limit, so only it is shown
        concurrency=(ConcurrencyLimit(2, None, "fn"),),
    )
    assert describe_function(config) == [
        "event: app/a when event.data.ok",
        "idempotency: one run per event.data.id per 24 h, extra events skipped",
        "concurrency: 2 steps at once",
        "retries: 3",
    ]
