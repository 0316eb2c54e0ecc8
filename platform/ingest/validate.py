"""Validate incoming events. A request is all or nothing: one bad event rejects it whole,
and the error names the event (by index) and what was wrong, so nothing is half-stored.

A large body is parsed in a worker process (`ingest_workers`), by `parse_large_body`: the same
checks, but an event of LARGE_EVENT_BYTES or more comes back as JSON bytes (`RawParts`), which
are stored as they are and handed to expressions as a `Document`, never as Python objects.
"""

import math
from dataclasses import field
from typing import Any

import orjson
from weir.expressions import Document
from weir.platform.foundation import jsonvalues
from weir.platform.foundation.record_type import record
from weir.platform.foundation.vocabulary import SYSTEM_EVENT_PREFIX

MAX_EVENTS = 5000
MAX_EVENT_BYTES = 3 * 1024 * 1024
LARGE_EVENT_BYTES = 64 * 1024  # from this size on, an event is kept as bytes (see above)
MAX_NAME = 512
TS_MIN = 315_532_800_000  # 1980-01-01T00:00:00Z
TS_MAX = 4_102_444_800_000  # 2100-01-01T00:00:00Z
# A future ts schedules the event's runs (`runtime.flow.scheduled`), at most this far ahead:
# Inngest's longest sleep, a year and a leap day. Further is a mistake (seconds for ms...).
TS_AHEAD_MS = 366 * 24 * 3_600_000


class EventError(ValueError):
    """The request's events were rejected; the message says why and what is allowed."""


@record
class RawParts:
    """A large event's `data` and `user` as stored JSON (orjson's compact form)."""

    data: bytes
    user: bytes


@record
class IncomingEvent:
    name: str
    data: dict[str, Any]  # {} when `raw` holds it
    user_id: str | None
    ts: int
    user: dict[str, Any]  # {} when `raw` holds it
    v: str | None
    raw: RawParts | None = None
    # With `raw`: expressions already evaluated over the event (see `Document.evaluated`).
    evaluated: dict[str, tuple[Any, float]] = field(default_factory=dict, compare=False)


def parse_body(body: bytes, now_ms: int, *, internal: bool = False) -> list[IncomingEvent]:
    return [event for event, _ in _parsed(body, now_ms, internal)]


def parse_large_body(body: bytes, now_ms: int) -> list[IncomingEvent]:
    """As `parse_body`, with each event of LARGE_EVENT_BYTES or more as bytes (`RawParts`).
    Run in a worker process: parsing and checking hold the GIL for as long as they take."""
    return [
        _as_raw(event) if size >= LARGE_EVENT_BYTES else event
        for event, size in _parsed(body, now_ms, False)
    ]


def parse_large_body_held(
    body: bytes, now_ms: int
) -> tuple[list[IncomingEvent], dict[int, dict[str, Any]]]:
    """As `parse_large_body`, and each large event (by index) also as the object its
    Document stands for, minus the `id` Weir gives it when the sender gave none (`held`): the
    worker keeps these to evaluate expressions over them without parsing them again."""
    events: list[IncomingEvent] = []
    held: dict[int, dict[str, Any]] = {}
    for index, (event, size) in enumerate(_parsed(body, now_ms, False)):
        if size >= LARGE_EVENT_BYTES:
            held[index] = _held(event)
            event = _as_raw(event)
        events.append(event)
    return events, held


def _held(event: IncomingEvent) -> dict[str, Any]:
    """The event as `orjson.loads(_document(event, id).raw)` gives it, in the same key order;
    without `id` when Weir will make it (then expressions reading it are not evaluated here)."""
    held: dict[str, Any] = {"name": event.name, "data": event.data}
    if event.user_id:
        held["id"] = event.user_id
    held |= {"ts": event.ts, "user": event.user}
    if event.v is not None:
        held["v"] = event.v
    return held


def _as_raw(event: IncomingEvent) -> IncomingEvent:
    raw = RawParts(orjson.dumps(event.data), orjson.dumps(event.user))
    return IncomingEvent(event.name, {}, event.user_id, event.ts, {}, event.v, raw)


def _parsed(body: bytes, now_ms: int, internal: bool) -> list[tuple[IncomingEvent, int]]:
    try:
        value = jsonvalues.loads(body)  # exact integers: out-of-range ones are named below
    except ValueError as exc:
        raise EventError(
            f"the body is not valid JSON ({exc}); send an event object or an array of them"
        ) from exc
    items = value if isinstance(value, list) else [value]
    if len(items) > MAX_EVENTS:
        raise EventError(f"{len(items)} events in one request; at most {MAX_EVENTS} are allowed")
    return [_validated(item, i, now_ms, internal) for i, item in enumerate(items)]


def validate_event(item: Any, index: int, now_ms: int, *, internal: bool = False) -> IncomingEvent:
    return _validated(item, index, now_ms, internal)[0]


def _validated(item: Any, index: int, now_ms: int, internal: bool) -> tuple[IncomingEvent, int]:
    """The event and its size in bytes as JSON."""
    where = f"event {index}"
    if not isinstance(item, dict):
        raise EventError(f"{where}: must be a JSON object with a 'name', got {type(item).__name__}")
    ts = _ts(item.get("ts"), where, now_ms)  # before the general check: its message says more
    size = _checked_size(item, where)
    name = _name(item.get("name"), where, internal)
    event = IncomingEvent(
        name=name,
        data=_data(item.get("data"), where, internal),
        user_id=_optional_str(item.get("id"), where, "id"),
        ts=ts,
        user=_user(item.get("user"), where),
        v=_optional_str(item.get("v"), where, "v"),
    )
    return event, size


def _checked_size(item: dict[str, Any], where: str) -> int:
    """The event's size in bytes as JSON, once every value is one Weir may keep. One strict
    encoding answers both for almost every event (what it refuses, the checks below name)."""
    try:
        dumped = orjson.dumps(item, option=orjson.OPT_STRICT_INTEGER)
    except orjson.JSONEncodeError:
        _check_values(item, where)  # before the size: orjson cannot measure what this refuses
        return _check_size(item, where)
    if jsonvalues.may_hold_big_float(dumped):
        _check_values(item, where)
    size = len(dumped)
    if size > MAX_EVENT_BYTES:
        return _check_size(item, where)  # says so
    return size


def _check_size(item: dict[str, Any], where: str) -> int:
    try:
        size = len(orjson.dumps(item))
    except orjson.JSONEncodeError as exc:  # orjson stops at 254 levels of nesting
        raise EventError(
            f"{where}: cannot be stored ({exc}); nest data at most 254 levels deep"
        ) from exc
    if size > MAX_EVENT_BYTES:
        raise EventError(
            f"{where}: is {size} bytes; an event may be at most {MAX_EVENT_BYTES} bytes (3 MiB)"
        )
    return size


def _check_values(item: dict[str, Any], where: str) -> None:
    problem = jsonvalues.problem(item)
    if problem:
        raise EventError(f"{where}: {problem}")


def _no_controls(text: str, where: str, field: str) -> None:
    found = jsonvalues.control_char(text)
    if found:
        raise EventError(
            f"{where}: '{field}' holds the control character {found.group()!r} at position "
            f"{found.start()}; names and ids must be printable text (no NUL, newline or tab)"
        )


def _name(name: Any, where: str, internal: bool) -> str:
    if not isinstance(name, str) or not name.strip():
        raise EventError(f"{where}: 'name' must be a non-empty string, got {name!r}")
    if len(name) > MAX_NAME:
        raise EventError(
            f"{where}: 'name' is {len(name)} characters; at most {MAX_NAME} are allowed"
        )
    _no_controls(name, where, "name")
    if not internal and name.lower().startswith(SYSTEM_EVENT_PREFIX):
        raise EventError(
            f"{where}: the name {name!r} is reserved; names starting with 'inngest/' are Weir's own"
        )
    return name


def _data(data: Any, where: str, internal: bool) -> dict[str, Any]:
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise EventError(f"{where}: 'data' must be a JSON object, got {type(data).__name__}")
    if internal:
        return data
    return {k: v for k, v in data.items() if k != "_inngest"}  # reserved for Weir's metadata


def _ts(ts: Any, where: str, now_ms: int) -> int:
    if isinstance(ts, bool):  # False == 0 in Python: checked first so it is not "now"
        raise EventError(f"{where}: 'ts' must be an integer of Unix milliseconds, got {ts!r}")
    if ts is None or ts == 0:
        return now_ms
    if not isinstance(ts, int | float) or not math.isfinite(ts) or ts != int(ts):
        raise EventError(f"{where}: 'ts' must be an integer of Unix milliseconds, got {ts!r}")
    if not TS_MIN <= int(ts) < TS_MAX:
        raise EventError(
            f"{where}: 'ts' {int(ts)} is outside the years 1980 to 2100 (Unix milliseconds)"
        )
    if ts > now_ms + TS_AHEAD_MS:
        raise EventError(
            f"{where}: 'ts' {int(ts)} lies more than 366 days ahead; a future ts schedules "
            "the event's runs for that time, at most 366 days ahead"
        )
    return int(ts)


def _optional_str(value: Any, where: str, field: str) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise EventError(f"{where}: '{field}' must be a string, got {type(value).__name__}")
    _no_controls(value, where, field)
    return value


def _user(user: Any, where: str) -> dict[str, Any]:
    if user is None:
        return {}
    if not isinstance(user, dict):
        raise EventError(f"{where}: 'user' must be a JSON object, got {type(user).__name__}")
    return user


def event_payload(event: IncomingEvent, event_id: str) -> dict[str, Any]:
    """The event as the SDK sees it: the user's `id` if given, else the internal id.
    A large event is a Document: its bytes are what `orjson.dumps` of the dict would give."""
    if event.raw is not None:
        return _document(event, event_id)
    payload: dict[str, Any] = {
        "name": event.name,
        "data": event.data,
        "id": event.user_id or event_id,
        "ts": event.ts,
        "user": event.user,
    }
    if event.v is not None:
        payload["v"] = event.v
    return payload


def _document(event: IncomingEvent, event_id: str) -> Document:
    assert event.raw is not None
    known: dict[str, Any] = {"name": event.name, "id": event.user_id or event_id, "ts": event.ts}
    if event.v is not None:
        known["v"] = event.v
    parts = {
        "name": orjson.dumps(event.name),
        "data": event.raw.data,
        "id": orjson.dumps(known["id"]),
        "ts": orjson.dumps(event.ts),
        "user": event.raw.user,
    }
    if event.v is not None:
        parts["v"] = orjson.dumps(event.v)
    raw = (
        b"{" + b",".join(b'"%s":%s' % (key.encode(), value) for key, value in parts.items()) + b"}"
    )
    return Document(event_id, raw, known, tuple(parts), event.evaluated)
