"""Validate incoming events. A request is all or nothing: one bad event rejects it whole,
and the error names the event (by index) and what was wrong, so nothing is half-stored."""

import math
from dataclasses import dataclass
from typing import Any

import orjson
from weir.platform import jsonvalues
from weir.platform.vocabulary import SYSTEM_EVENT_PREFIX

MAX_EVENTS = 5000
MAX_EVENT_BYTES = 3 * 1024 * 1024
MAX_NAME = 512
TS_MIN = 315_532_800_000  # 1980-01-01T00:00:00Z
TS_MAX = 4_102_444_800_000  # 2100-01-01T00:00:00Z


class EventError(ValueError):
    """The request's events were rejected; the message says why and what is allowed."""


@dataclass(frozen=True)
class IncomingEvent:
    name: str
    data: dict[str, Any]
    user_id: str | None
    ts: int
    user: dict[str, Any]
    v: str | None


def parse_body(body: bytes, now_ms: int, *, internal: bool = False) -> list[IncomingEvent]:
    try:
        value = jsonvalues.loads(body)  # exact integers: out-of-range ones are named below
    except ValueError as exc:
        raise EventError(
            f"the body is not valid JSON ({exc}); send an event object or an array of them"
        ) from exc
    items = value if isinstance(value, list) else [value]
    if len(items) > MAX_EVENTS:
        raise EventError(f"{len(items)} events in one request; at most {MAX_EVENTS} are allowed")
    return [validate_event(item, i, now_ms, internal=internal) for i, item in enumerate(items)]


def validate_event(item: Any, index: int, now_ms: int, *, internal: bool = False) -> IncomingEvent:
    where = f"event {index}"
    if not isinstance(item, dict):
        raise EventError(f"{where}: must be a JSON object with a 'name', got {type(item).__name__}")
    ts = _ts(item.get("ts"), where, now_ms)  # before the general check: its message says more
    _check_values(item, where)  # before the size: orjson cannot even measure what this refuses
    _check_size(item, where)
    name = _name(item.get("name"), where, internal)
    return IncomingEvent(
        name=name,
        data=_data(item.get("data"), where, internal),
        user_id=_optional_str(item.get("id"), where, "id"),
        ts=ts,
        user=_user(item.get("user"), where),
        v=_optional_str(item.get("v"), where, "v"),
    )


def _check_size(item: dict[str, Any], where: str) -> None:
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
    """The event as the SDK sees it: the user's `id` if given, else the internal id."""
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
