"""Builders for the ops the server performs (sleep, wait, invoke) and their results."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from weir.sdk._declaring.function import Function
from weir.sdk._durations import Duration, iso_utc, now_utc, to_timedelta, to_wire
from weir.sdk._event import Event
from weir.sdk._steps.ops import INVOKE, SLEEP, WAIT_FOR_EVENT, WAIT_FOR_SIGNAL, Op, StepSlot

Build = Callable[[StepSlot], Op]


def sleep_op(duration: Duration) -> Build:
    delta = to_timedelta(duration)  # checked before the step, so bad input fails loudly
    return lambda slot: Op(SLEEP, slot, name=iso_utc(now_utc() + delta))


def sleep_until_op(until: datetime) -> Build:
    if not isinstance(until, datetime):
        raise TypeError(f"sleep_until needs a datetime, got {until!r}")
    return lambda slot: Op(SLEEP, slot, name=iso_utc(until))


def wait_op(event: str, if_exp: str | None, timeout: Duration) -> Build:
    opts = {"if": if_exp, "timeout": to_wire(timeout)}
    return lambda slot: Op(WAIT_FOR_EVENT, slot, name=event, opts=opts)


CONFLICTS = ("fail", "replace")


def signal_op(signal: str, timeout: Duration, if_exp: str | None, on_conflict: str) -> Build:
    """Inngest's WaitForSignal opts: `signal`, `timeout`, `conflict`; and Weir's `if`."""
    if not isinstance(signal, str) or not signal:
        raise ValueError(f"wait_for_signal needs a non-empty signal name, got {signal!r}")
    if on_conflict not in CONFLICTS:
        raise ValueError(f"on_conflict must be 'fail' or 'replace', got {on_conflict!r}")
    opts: dict[str, Any] = {"signal": signal, "timeout": to_wire(timeout), "conflict": on_conflict}
    if if_exp is not None:
        opts["if"] = if_exp
    return lambda slot: Op(WAIT_FOR_SIGNAL, slot, name=slot.user_id, opts=opts)


def invoke_op(
    function: Function | str, data: Mapping[str, Any] | None, timeout: Duration | None
) -> Build:
    slug = function.slug if isinstance(function, Function) else function
    if not isinstance(slug, str) or not slug:
        raise ValueError(f"invoke needs a Function or a '<app_id>-<fn_id>' slug, got {slug!r}")
    payload = {"data": dict(data or {}), "v": None}
    wire_timeout = None if timeout is None else to_wire(timeout)
    opts = {"function_id": slug, "payload": payload, "timeout": wire_timeout}
    return lambda slot: Op(INVOKE, slot, name=slot.user_id, opts=opts)


def as_event(value: Any) -> Event | None:
    """A wait's memo: the matched event (bare), or None on timeout."""
    return None if value is None else Event.model_validate(value)


def event_list(events: Event | Sequence[Event]) -> list[Event]:
    items = [events] if isinstance(events, Event) else list(events)
    for item in items:
        if not isinstance(item, Event):
            raise TypeError(f"expected Event objects, got {item!r}")
    return items
