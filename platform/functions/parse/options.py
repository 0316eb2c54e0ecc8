"""Reading a function's flow-control options, with Weir's bounds (docs/semantics.md)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, cast

from weir.platform.functions.config import (
    Batching,
    CancelOn,
    ConcurrencyLimit,
    Debounce,
    RateLimit,
    Singleton,
    Throttle,
    Timeouts,
)
from weir.platform.functions.parse.cel_checks import EVENT_AND_ASYNC, EVENT_ONLY
from weir.platform.functions.parse.durations import DAY_MS, SECOND_MS
from weir.platform.functions.parse.fields import (
    check_expression,
    read_choice,
    read_duration,
    read_expression,
    read_int,
    read_list,
    read_object,
    read_text,
    refuse,
)
from weir.platform.functions.problems import Issues
from weir.platform.gates import cancel_on

MAX_CONCURRENCY_LIMITS = 2
MAX_CANCELS = 5
MAX_EVENT_NAME = 255
Scope = Literal["fn", "env", "account"]


def read_concurrency(issues: Issues, value: Any) -> tuple[ConcurrencyLimit, ...]:
    # Inngest also takes a bare number or a single object; both mean a one-item list.
    if value is None:
        return ()
    if isinstance(value, int) and not isinstance(value, bool):
        value = [{"limit": value}]
    elif isinstance(value, Mapping):
        value = [value]
    items = read_list(issues, value, "concurrency", MAX_CONCURRENCY_LIMITS) or []
    limits = [_concurrency_limit(issues, item, f"concurrency[{i}]") for i, item in enumerate(items)]
    return tuple(limit for limit in limits if limit is not None)


def _concurrency_limit(issues: Issues, value: Any, path: str) -> ConcurrencyLimit | None:
    item = read_object(issues, value, path)
    if item is None:
        return None
    limit = read_int(issues, item.get("limit"), f"{path}.limit", 0)
    scope = _scope(issues, item.get("scope"), f"{path}.scope")
    key = read_expression(issues, item.get("key"), f"{path}.key", EVENT_ONLY)
    if scope in ("env", "account") and item.get("key") in (None, ""):
        issues.add(f"{path}.key", f"is required when scope is '{scope}'")
    if limit is None or scope is None:
        return None
    return ConcurrencyLimit(limit=limit, key=key, scope=scope)


def _scope(issues: Issues, value: Any, path: str) -> Scope | None:
    if value is None:
        return "fn"
    return cast(Scope | None, read_choice(issues, value, path, ("fn", "env", "account")))


def read_throttle(issues: Issues, value: Any) -> Throttle | None:
    item = _optional_object(issues, value, "throttle")
    if item is None:
        return None
    limit = read_int(issues, item.get("limit"), "throttle.limit", 1)
    period = read_duration(issues, item.get("period"), "throttle.period", SECOND_MS)
    # Weir's GCRA counts burst as extra starts beyond the first; absent means none.
    burst = 0 if item.get("burst") is None else read_int(issues, item["burst"], "throttle.burst", 0)
    key = read_expression(issues, item.get("key"), "throttle.key", EVENT_ONLY)
    if limit is None or period is None or burst is None:
        return None
    return Throttle(limit=limit, period_ms=period, burst=burst, key=key)


def read_rate_limit(issues: Issues, value: Any) -> RateLimit | None:
    item = _optional_object(issues, value, "rateLimit")
    if item is None:
        return None
    limit = read_int(issues, item.get("limit"), "rateLimit.limit", 1)
    period = read_duration(issues, item.get("period"), "rateLimit.period", SECOND_MS, DAY_MS)
    key = read_expression(issues, item.get("key"), "rateLimit.key", EVENT_ONLY)
    if limit is None or period is None:
        return None
    return RateLimit(limit=limit, period_ms=period, key=key)


def read_debounce(issues: Issues, value: Any) -> Debounce | None:
    item = _optional_object(issues, value, "debounce")
    if item is None:
        return None
    period = read_duration(issues, item.get("period"), "debounce.period", SECOND_MS, 7 * DAY_MS)
    timeout = _optional_duration(issues, item.get("timeout"), "debounce.timeout")
    key = read_expression(issues, item.get("key"), "debounce.key", EVENT_ONLY)
    if period is None or timeout is False:
        return None
    return Debounce(period_ms=period, key=key, timeout_ms=timeout)


def read_batching(issues: Issues, value: Any) -> Batching | None:
    item = _optional_object(issues, value, "batchEvents")
    if item is None:
        return None
    size = read_int(issues, item.get("maxSize"), "batchEvents.maxSize", 2)
    timeout = read_duration(issues, item.get("timeout"), "batchEvents.timeout", SECOND_MS)
    key = read_expression(issues, item.get("key"), "batchEvents.key", EVENT_ONLY)
    condition = read_expression(issues, item.get("if"), "batchEvents.if", EVENT_ONLY)
    if size is None or timeout is None:
        return None
    return Batching(max_size=size, timeout_ms=timeout, key=key, if_expr=condition)


def read_singleton(issues: Issues, value: Any) -> Singleton | None:
    item = _optional_object(issues, value, "singleton")
    if item is None:
        return None
    mode = read_choice(issues, item.get("mode"), "singleton.mode", ("skip", "cancel"))
    key = read_expression(issues, item.get("key"), "singleton.key", EVENT_ONLY)
    if mode is None:
        return None
    return Singleton(mode=cast(Literal["skip", "cancel"], mode), key=key)


def read_priority_run(issues: Issues, value: Any) -> str | None:
    item = _optional_object(issues, value, "priority")
    if item is None:
        return None
    return read_expression(issues, item.get("run"), "priority.run", EVENT_ONLY)


def read_idempotency(issues: Issues, value: Any) -> str | None:
    return read_expression(issues, value, "idempotency", EVENT_ONLY)


def read_timeouts(issues: Issues, value: Any) -> Timeouts | None:
    item = _optional_object(issues, value, "timeouts")
    if item is None:
        return None
    start = _optional_duration(issues, item.get("start"), "timeouts.start")
    finish = _optional_duration(issues, item.get("finish"), "timeouts.finish")
    if start is False or finish is False or (start is None and finish is None):
        return None
    return Timeouts(start_ms=start, finish_ms=finish)


def read_cancel_on(issues: Issues, value: Any) -> tuple[CancelOn, ...]:
    if value is None:
        return ()
    items = read_list(issues, value, "cancel", MAX_CANCELS) or []
    cancels = [_cancel(issues, item, f"cancel[{index}]") for index, item in enumerate(items)]
    return tuple(cancel for cancel in cancels if cancel is not None)


def _cancel(issues: Issues, value: Any, path: str) -> CancelOn | None:
    item = read_object(issues, value, path)
    if item is None:
        return None
    event = read_text(issues, item.get("event"), f"{path}.event", MAX_EVENT_NAME)
    match = _match_expression(issues, item.get("match"), f"{path}.match")
    condition = read_expression(issues, item.get("if"), f"{path}.if", EVENT_AND_ASYNC)
    timeout = _optional_duration(issues, item.get("timeout"), f"{path}.timeout")
    if event is None or timeout is False:
        return None
    return CancelOn(event=event, if_expr=_both(match, condition), timeout_ms=timeout)


def _match_expression(issues: Issues, value: Any, path: str) -> str | None:
    """`match: "data.x"` is shorthand for `event.data.x == async.data.x`."""
    if value is None or value == "":
        return None
    wanted = "a field path like 'data.user_id'"
    if not isinstance(value, str):
        refuse(issues, path, wanted, value)
        return None
    try:
        expression = cancel_on.match_expression(value)  # the gate owns what `match` means
    except ValueError:
        refuse(issues, path, wanted, value)
        return None
    return expression if check_expression(issues, expression, path, EVENT_AND_ASYNC) else None


def _both(first: str | None, second: str | None) -> str | None:
    if first is None or second is None:
        return first or second
    return f"({first}) && ({second})"


def _optional_object(issues: Issues, value: Any, path: str) -> Mapping[str, Any] | None:
    return None if value is None else read_object(issues, value, path)


def _optional_duration(issues: Issues, value: Any, path: str) -> int | Literal[False] | None:
    """None when absent, False when invalid (the problem is recorded), else milliseconds."""
    if value is None:
        return None
    ms = read_duration(issues, value, path, SECOND_MS)
    return False if ms is None else ms
