"""What each opcode's fields must hold (docs/protocol.md §8), checked when the answer is read.

An op that passes is applied without surprises: every time it names can be scheduled, every
duration parses, every id and name fits the store. One that does not fails its run once,
with a message naming the op, the field and what is allowed; before these checks a bad field
raised inside the scheduler and the call came back at every lease, forever.
"""

from datetime import UTC, datetime
from typing import Any

from weir.expressions import check_expression
from weir.platform.executor.ai_options import AIOptsError, parse_ai_opts
from weir.platform.foundation import jsonvalues
from weir.platform.foundation.vocabulary import Opcode
from weir.platform.functions.parse.durations import parse_duration_ms

MAX_ID = 64  # the store's step-id column
MAX_EVENT_NAME = 512  # as for events sent to Weir
MAX_FUNCTION_ID = 255  # a function slug
MAX_DURATION_MS = 100 * 365 * 24 * 3600 * 1000
LAST_WAKE_MS = int(datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC).timestamp() * 1000)
WAIT_VARIABLES = ("event", "async")


class OpError(ValueError):
    """An op's fields are well-formed JSON but not something Weir can act on."""


def check_op(item: dict[str, Any]) -> None:
    """Raise OpError saying what is wrong with the op `item` (an object with a string op)."""
    where = f"op {item['op']}"
    _check_id(item.get("id"), where)
    where = f"op {item['op']} {item['id']!r}"
    unkeepable = jsonvalues.problem(item)
    if unkeepable:
        raise OpError(f"{where}: {unkeepable}")
    for field in ("name", "displayName"):
        if isinstance(item.get(field), str) and "\x00" in item[field]:
            raise OpError(f"{where}: '{field}' holds a NUL character, which cannot be stored")
    opts: dict[str, Any] = item["opts"] if isinstance(item.get("opts"), dict) else {}
    checker = _CHECKS.get(item["op"])
    if checker is not None:
        checker(item, opts, where)


def _check_id(value: Any, where: str) -> None:
    if not isinstance(value, str) or not value:
        raise OpError(f"{where} has no string 'id', got {value!r:.80}")
    if len(value) > MAX_ID or jsonvalues.control_char(value):
        raise OpError(
            f"{where}: 'id' {value!r:.80} must be at most {MAX_ID} printable characters "
            "(SDKs send a hash of the step name)"
        )


def _sleep(item: dict[str, Any], opts: dict[str, Any], where: str) -> None:
    name = item.get("name")
    if isinstance(name, str) and wake_time(name) is not None:
        return
    if isinstance(opts.get("duration"), str):
        duration_ms(opts["duration"], f"{where}: 'opts.duration'")
        return
    raise OpError(
        f"{where}: 'name' must be the ISO-8601 time to wake at (e.g. 2030-01-02T03:04:05Z, "
        f"up to the year 9999), got {name!r:.80}"
    )


def _wait(item: dict[str, Any], opts: dict[str, Any], where: str) -> None:
    event = opts.get("event") if isinstance(opts.get("event"), str) else item.get("name")
    _check_event_name(event, where)
    _optional_duration(opts.get("timeout"), f"{where}: 'opts.timeout'")
    condition = opts.get("if")
    if condition is None:
        return
    if not isinstance(condition, str) or "\x00" in condition:  # NUL: not storable text
        raise OpError(f"{where}: 'opts.if' must be a CEL expression string (no NUL) or null")
    problems = check_expression(condition, WAIT_VARIABLES)
    if problems:
        raise OpError(f"{where}: 'opts.if' is not a valid expression: {'; '.join(problems)}")


SIGNAL_CONFLICTS = ("fail", "replace")  # Inngest's opts.conflict (fail when absent)


def _signal(item: dict[str, Any], opts: dict[str, Any], where: str) -> None:
    signal = opts.get("signal")
    if not isinstance(signal, str) or not signal.strip():
        raise OpError(f"{where}: 'opts.signal' must be the name of the signal to wait for")
    if len(signal) > MAX_EVENT_NAME or jsonvalues.control_char(signal):
        raise OpError(
            f"{where}: the signal name {signal!r:.80} must be at most {MAX_EVENT_NAME} "
            "printable characters"
        )
    _optional_duration(opts.get("timeout"), f"{where}: 'opts.timeout'")
    conflict = opts.get("conflict")
    if conflict is not None and conflict not in SIGNAL_CONFLICTS:
        raise OpError(f"{where}: 'opts.conflict' must be 'fail' or 'replace', got {conflict!r:.80}")
    _condition(opts.get("if"), where)


def _condition(condition: Any, where: str) -> None:
    if condition is None:
        return
    if not isinstance(condition, str) or "\x00" in condition:  # NUL: not storable text
        raise OpError(f"{where}: 'opts.if' must be a CEL expression string (no NUL) or null")
    problems = check_expression(condition, WAIT_VARIABLES)
    if problems:
        raise OpError(f"{where}: 'opts.if' is not a valid expression: {'; '.join(problems)}")


def _check_event_name(event: Any, where: str) -> None:
    if not isinstance(event, str) or not event.strip():
        raise OpError(f"{where}: 'name' must be the name of the event to wait for")
    if len(event) > MAX_EVENT_NAME or jsonvalues.control_char(event):
        raise OpError(
            f"{where}: the event name {event!r:.80} must be at most {MAX_EVENT_NAME} "
            "printable characters"
        )


def _invoke(item: dict[str, Any], opts: dict[str, Any], where: str) -> None:
    target = opts.get("function_id")
    if not isinstance(target, str) or not target or len(target) > MAX_FUNCTION_ID:
        raise OpError(
            f"{where}: 'opts.function_id' must be the slug of the function to invoke "
            f"(<app>-<function>, at most {MAX_FUNCTION_ID} characters), got {target!r:.80}"
        )
    _optional_duration(opts.get("timeout"), f"{where}: 'opts.timeout'")
    payload = opts.get("payload")
    if payload is not None and not isinstance(payload, dict):
        raise OpError(f"{where}: 'opts.payload' must be an object like {{\"data\": {{...}}}}")
    data = (payload or {}).get("data")
    if data is not None and not isinstance(data, dict):
        raise OpError(f"{where}: 'opts.payload.data' must be an object (the event's data)")


def _optional_duration(value: Any, what: str) -> None:
    if value is not None:
        duration_ms(value, what)


def duration_ms(value: Any, what: str) -> int:
    """A duration from an op, at most 100 years; OpError saying what is allowed otherwise."""
    try:
        ms = parse_duration_ms(value)
    except ValueError as exc:
        raise OpError(f"{what}: {exc}") from None
    if ms > MAX_DURATION_MS:
        raise OpError(f"{what}: {value!r} is longer than 100 years, the longest allowed")
    return ms


def wake_time(text: str) -> int | None:
    """Unix ms of an ISO-8601 time (UTC unless it says otherwise), or None if it is not one."""
    try:
        at = datetime.fromisoformat(text.replace("Z", "+00:00"))
        if at.tzinfo is None:
            at = at.replace(tzinfo=UTC)  # never the server's local zone
        ms = int(at.timestamp() * 1000)
    except (ValueError, OverflowError, OSError):
        return None
    return ms if ms <= LAST_WAKE_MS else None


def _ai(item: dict[str, Any], opts: dict[str, Any], where: str) -> None:
    try:
        parse_ai_opts(item.get("opts"), where)
    except AIOptsError as exc:
        raise OpError(str(exc)) from None


_CHECKS = {
    Opcode.SLEEP: _sleep,
    Opcode.WAIT_FOR_EVENT: _wait,
    Opcode.WAIT_FOR_SIGNAL: _signal,
    Opcode.INVOKE_FUNCTION: _invoke,
    Opcode.AI_GATEWAY: _ai,
}
