"""Plain-words summaries of a function's options, for the UI.

They state the effective behaviour (docs/semantics.md), not the raw numbers: a throttle of
3 per 10 s with no burst reads "1 at once, then 1 every 3.3 s".
"""

from __future__ import annotations

from weir.platform.functions.config import (
    Batching,
    CancelOn,
    ConcurrencyLimit,
    CronTrigger,
    Debounce,
    FunctionConfig,
    Lane,
    RateLimit,
    RollingWindow,
    Singleton,
    Throttle,
    Timeouts,
    Trigger,
)
from weir.platform.functions.parse.durations import DAY_MS, HOUR_MS, MINUTE_MS, SECOND_MS

_SPAN_UNITS = ((DAY_MS, "d"), (HOUR_MS, "h"), (MINUTE_MS, "min"), (SECOND_MS, "s"))
_SHARED = {"env": ", shared across the environment", "account": ", shared across the account"}
PRIORITY_BOUND_S = 600


def format_span(ms: float) -> str:
    """A readable span in the largest unit that is at least 1: "3.3 s", "1 min", "7 d"."""
    for unit_ms, unit in _SPAN_UNITS:
        if ms >= unit_ms:
            return f"{_number(ms / unit_ms)} {unit}"
    return f"{_number(ms)} ms"


def _number(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".")


def _per(key: str | None) -> str:
    return "" if key is None else f" per {key}"


def describe_throttle(throttle: Throttle) -> str:
    # From idle 1 + burst start at once, then one every period / limit (classic GCRA).
    every = format_span(throttle.period_ms / throttle.limit)
    return f"throttle: {1 + throttle.burst} at once, then 1 every {every}{_per(throttle.key)}"


def describe_rate_limit(rate_limit: RateLimit) -> str:
    span = format_span(rate_limit.period_ms)
    per = _per(rate_limit.key)
    return f"rate limit: up to {rate_limit.limit} per {span}{per}, extra events skipped"


def describe_rolling_window(window: RollingWindow) -> str:
    meter = "" if window.rate_name is None else f", meter {window.rate_name!r} (shared)"
    span = format_span(window.window_ms)
    return f"rolling window: up to {window.limit} starts in any {span}{_per(window.key)}{meter}"


def describe_concurrency(limit: ConcurrencyLimit) -> str:
    if limit.limit == 0:
        return f"concurrency: no limit{_per(limit.key)}"
    steps = "step" if limit.limit == 1 else "steps"
    shared = _SHARED.get(limit.scope, "")
    return f"concurrency: {limit.limit} {steps} at once{_per(limit.key)}{shared}"


def describe_debounce(debounce: Debounce) -> str:
    text = f"debounce: runs {format_span(debounce.period_ms)} after the last event"
    text += _per(debounce.key)
    if debounce.timeout_ms is not None:
        text += f", at most {format_span(debounce.timeout_ms)} after the first"
    return text


def describe_batching(batching: Batching) -> str:
    text = (
        f"batching: up to {batching.max_size} events per run, started at most "
        f"{format_span(batching.timeout_ms)} after the first{_per(batching.key)}"
    )
    if batching.if_expr is not None:
        text += f"; only events where {batching.if_expr} are batched"
    return text


def describe_singleton(singleton: Singleton) -> str:
    outcome = {
        "skip": "new runs are skipped while one is active",
        "cancel": "a new run cancels the active one",
    }[singleton.mode]
    return f"singleton: one run at a time{_per(singleton.key)}; {outcome}"


def describe_lane(lane: Lane) -> str:
    shared = "" if lane.name is None else f", shared with every function naming lane {lane.name!r}"
    return f"lane: one run at a time{_per(lane.key)}, in the order runs were created{shared}"


def describe_priority(run: str) -> str:
    bound = PRIORITY_BOUND_S
    return f"priority: runs queue as if created {run} seconds earlier (limited to ±{bound} s)"


def describe_idempotency(key: str) -> str:
    return f"idempotency: one run per {key} per 24 h, extra events skipped"


def describe_timeouts(timeouts: Timeouts) -> str:
    parts = []
    if timeouts.start_ms is not None:
        parts.append(f"cancelled if not started within {format_span(timeouts.start_ms)}")
    if timeouts.finish_ms is not None:
        parts.append(f"cancelled if not done {format_span(timeouts.finish_ms)} after starting")
    return "timeouts: " + ("; ".join(parts) or "none")


def describe_cancel_on(cancel: CancelOn) -> str:
    text = f"cancel on: {cancel.event}"
    if cancel.if_expr is not None:
        text += f" when {cancel.if_expr}"
    if cancel.timeout_ms is not None:
        text += f", within {format_span(cancel.timeout_ms)} of the run's creation"
    return text


def describe_trigger(trigger: Trigger) -> str:
    if isinstance(trigger, CronTrigger):
        text = f"cron: {trigger.cron} ({trigger.timezone or 'server time zone'})"
        jitter = trigger.jitter_ms
        return text + (f", up to {format_span(jitter)} late" if jitter else "")
    condition = "" if trigger.expression is None else f" when {trigger.expression}"
    return f"event: {trigger.event}{condition}"


def describe_function(config: FunctionConfig) -> list[str]:
    """One line per trigger and per option set, in the order the gates apply them."""
    lines = [describe_trigger(trigger) for trigger in config.triggers]
    lines += _flow_lines(config)
    lines += [describe_cancel_on(cancel) for cancel in config.cancel_on]
    if config.timeouts is not None:
        lines.append(describe_timeouts(config.timeouts))
    lines.append(f"retries: {config.retries}")
    return lines


def _flow_lines(config: FunctionConfig) -> list[str]:
    optional = [
        config.batching and describe_batching(config.batching),
        config.idempotency and describe_idempotency(config.idempotency),
        # idempotency replaces any rate limit (docs/semantics.md), so only one line shows
        config.rate_limit and not config.idempotency and describe_rate_limit(config.rate_limit),
        config.debounce and describe_debounce(config.debounce),
        config.singleton and describe_singleton(config.singleton),
        config.throttle and describe_throttle(config.throttle),
        config.priority_run and describe_priority(config.priority_run),
    ]
    lines = [line for line in optional if line]
    lines += [describe_lane(config.lane)] if config.lane is not None else []
    lines += [describe_rolling_window(window) for window in config.rolling_windows]
    return lines + [describe_concurrency(limit) for limit in config.concurrency]
