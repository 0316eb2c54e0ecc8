"""Classifying an SDK response (docs/protocol.md §8): completed, step ops, or a failed attempt."""

import contextlib
import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from weir.platform.executor.opchecks import OpError, check_op, wake_time
from weir.platform.foundation import jsonvalues
from weir.platform.foundation.record_type import record
from weir.platform.foundation.vocabulary import Opcode

MAX_RESPONSE_BYTES = 8 * 1024 * 1024
KNOWN_OPS = frozenset(
    {
        Opcode.STEP_RUN,
        Opcode.STEP_ERROR,
        Opcode.STEP_FAILED,
        Opcode.STEP_PLANNED,
        Opcode.SLEEP,
        Opcode.WAIT_FOR_EVENT,
        Opcode.WAIT_FOR_SIGNAL,
        Opcode.INVOKE_FUNCTION,
        Opcode.AI_GATEWAY,
        Opcode.STEP,
    }
)


@record
class Timing:
    """When the call that produced an outcome began and ended (ms)."""

    started: int
    ended: int


@record
class Op:
    op: str
    id: str
    name: str
    display_name: str
    opts: dict[str, Any]
    data: Any
    error: dict[str, Any] | None


@record
class Completed:
    output: Any


@record
class Ops:
    ops: list[Op]
    no_retry: bool = False
    retry_after_ms: int | None = None


@record
class AttemptFailed:
    error: dict[str, Any]
    no_retry: bool = False
    retry_after_ms: int | None = None
    status: int = 0


@record
class Checkpointed:
    """Steps the app ran one after another in a single request, then what ended it: nothing
    more (call again), the run's return value, its error, or ops such as a sleep."""

    steps: list[Op]
    then: "Completed | Ops | AttemptFailed | None" = None


Outcome = Completed | Ops | AttemptFailed | Checkpointed
SAVED_STEP_OPS = (Opcode.STEP_RUN, Opcode.STEP)
RUN_ENDS = (Opcode.RUN_COMPLETE, Opcode.RUN_ERROR)


@dataclass
class RawResponse:
    status: int
    headers: dict[str, str]  # lower-cased names
    body: bytes = field(repr=False)


def classify(raw: RawResponse, now_ms: int) -> Outcome:
    if raw.status == 201:
        raw = _unwrap_stream(raw)
    no_retry = raw.headers.get("x-inngest-no-retry", "").lower() == "true"
    retry_after = parse_retry_after(raw.headers.get("retry-after"), now_ms)
    if raw.status in (200, 206) and "x-inngest-sdk" not in raw.headers:
        return failed(
            "NotAnSdkResponse",
            f"HTTP {raw.status} without an x-inngest-sdk header: the URL did not answer as an SDK",
            status=raw.status,
        )
    if raw.status == 200:
        return _completed(raw)
    if raw.status == 206:
        return _ops(raw, no_retry, retry_after)
    if raw.status == 401:
        return failed(
            "Unauthorized",
            "the app refused the request's signature (HTTP 401): Weir "
            "and the app must share a signing key",
            status=401,
        )
    return AttemptFailed(_error_body(raw), no_retry, retry_after, raw.status)


def _loads(data: bytes) -> Any:
    """JSON, or ValueError: nesting too deep for the parser is an error, not a crash."""
    return jsonvalues.loads(data)


def failed(name: str, message: str, *, status: int = 0, no_retry: bool = False) -> AttemptFailed:
    return AttemptFailed({"name": name, "message": message}, no_retry=no_retry, status=status)


def _completed(raw: RawResponse) -> Outcome:
    output = output_of(raw.body)
    unkeepable = jsonvalues.problem(output, "output")
    if unkeepable:  # the same code would return the same value: no retry
        return failed("InvalidOutput", f"the function's return value {unkeepable}", no_retry=True)
    return Completed(output)


def output_of(body: bytes) -> Any:
    """A 200 body as the run's output, read as Inngest reads it: JSON as its value, an object
    the SDK encoded twice (`"{...}"`) as the object, anything else as its text. Some hosts
    (DigitalOcean functions) send a returned string as raw text, not as a JSON string."""
    if not body.strip():
        return None
    try:
        value = _loads(body)
    except ValueError:
        return body.decode("utf-8", errors="replace")
    return _object_encoded_twice(value)


def _object_encoded_twice(value: Any) -> Any:
    """`"{...}"`, a JSON string holding an object, as that object; any other value as it is."""
    if isinstance(value, str) and value.startswith("{") and value.endswith("}"):
        with contextlib.suppress(ValueError):
            inner = _loads(value.encode())
            if isinstance(inner, dict):
                return inner
    return value


def _ops(raw: RawResponse, no_retry: bool, retry_after: int | None) -> Outcome:
    try:
        value = _loads(raw.body)
        items = value if isinstance(value, list) else [value]
        return _shape([_op(item) for item in items], no_retry, retry_after)
    except OpError as exc:  # well-formed but unusable: asking again gets the same answer
        return failed(
            "InvalidOp", f"the SDK answered with an op Weir cannot apply: {exc}", no_retry=True
        )
    except (ValueError, TypeError, KeyError) as exc:
        return failed("InvalidResponse", f"the SDK answered 206 with invalid step ops: {exc}")


def _shape(ops: list[Op], no_retry: bool, retry_after: int | None) -> Outcome:
    """Ops as sent, or, when steps lead and more follows, the steps and what ended the request."""
    end = ops[-1] if ops and ops[-1].op in RUN_ENDS else None
    body = ops[:-1] if end is not None else ops
    if any(o.op in RUN_ENDS for o in body):
        raise OpError("RunComplete or RunError may only be the last op of an answer")
    lead = next((i for i, o in enumerate(body) if o.op not in SAVED_STEP_OPS), len(body))
    if end is not None and lead < len(body):
        raise OpError(f"{end.op} may follow only steps that ran, not {body[lead].op}")
    rest = body[lead:]
    then: Completed | Ops | AttemptFailed | None = None
    if rest:
        then = Ops(rest, no_retry, retry_after)
    elif end is not None:
        then = _ending(end, no_retry, retry_after)
    if lead == 0 or (lead == 1 and then is None):
        return then or Ops(body, no_retry, retry_after)  # a lone step, as every SDK sends
    return Checkpointed(body[:lead], then)


def _ending(op: Op, no_retry: bool, retry_after: int | None) -> Completed | AttemptFailed:
    if op.op == Opcode.RUN_COMPLETE:  # read as the value of a 200 body is
        output = _object_encoded_twice(op.data)
        unkeepable = jsonvalues.problem(output, "output")
        if unkeepable:  # the same code would return the same value: no retry
            return failed(
                "InvalidOutput", f"the function's return value {unkeepable}", no_retry=True
            )
        return Completed(output)
    return AttemptFailed(_error_fields(op.error), no_retry, retry_after)


def _op(item: Any) -> Op:
    if not isinstance(item, dict) or not isinstance(item.get("op"), str):
        raise ValueError(f"an op must be an object with a string 'op', got {item!r:.200}")
    if not isinstance(item.get("id"), str) or not item["id"]:
        raise ValueError(f"op {item['op']} has no string 'id'")
    check_op(item)
    opts: dict[str, Any] = _typed(item.get("opts"), dict, {})
    error: dict[str, Any] | None = _typed(item.get("error"), dict, None)
    name: str = _typed(item.get("name"), str, "")
    display: str = _typed(item.get("displayName"), str, name)
    return Op(item["op"], item["id"], name, display, opts, item.get("data"), error)


def _typed(value: Any, kind: type, default: Any) -> Any:
    return value if isinstance(value, kind) else default


def _error_body(raw: RawResponse) -> dict[str, Any]:
    try:
        value = _loads(raw.body)
    except ValueError:
        value = None
    if isinstance(value, dict) and isinstance(value.get("message"), str):
        return _error_fields(value)
    text = raw.body[:2000].decode("utf-8", "replace")
    return {"name": "HttpError", "message": f"HTTP {raw.status}: {text}"}


def _error_fields(value: Any) -> dict[str, Any]:
    """An error object as the app sent it, JSON for JSON, as Inngest keeps it (`"stack": null`
    and fields of the app's own stay); a name and a message are added only where it has
    none. One holding a value no run can keep (e.g. an integer beyond 2^53) keeps its text
    fields only: the error itself is still worth keeping."""
    if not isinstance(value, dict):
        return {"name": "Error", "message": "the app reported an error without an error object"}
    kept = value
    if jsonvalues.problem(value) is not None:
        text = ("name", "message", "stack", "code")
        kept = {k: value[k] for k in text if isinstance(value.get(k), str)}
    name = kept.get("name")
    named = {} if isinstance(name, str) and name else {"name": "Error"}
    return {"message": ""} | kept | named


def _unwrap_stream(raw: RawResponse) -> RawResponse:
    try:
        envelope = _loads(raw.body.lstrip())
        if jsonvalues.problem(envelope):  # e.g. too deep to turn its headers into text
            raise ValueError("the envelope holds values Weir cannot keep")
        body = envelope.get("body", "")
        headers = {str(k).lower(): str(v) for k, v in (envelope.get("headers") or {}).items()}
        status = int(envelope["status"])
        if not 100 <= status <= 599:
            raise ValueError(f"status {status} is not an HTTP status")
        return RawResponse(
            status,
            raw.headers | headers,
            body.encode() if isinstance(body, str) else json.dumps(body).encode(),
        )
    except (ValueError, KeyError, TypeError, AttributeError, OverflowError):
        return RawResponse(
            500, raw.headers, b'{"name":"InvalidResponse","message":"bad stream envelope"}'
        )


def parse_retry_after(value: str | None, now_ms: int) -> int | None:
    """Seconds or an ISO-8601/HTTP date; clamped to 1 s .. 24 h from now."""
    if not value:
        return None
    value = value.strip()
    if value.isascii() and value.isdigit():
        # anything past a day is clamped below: no need to read a thousand-digit number
        digits = value.lstrip("0") or "0"
        at = now_ms + (int(digits) if len(digits) <= 12 else 10**12) * 1000
    else:
        try:
            at = int(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000)
        except (ValueError, OverflowError, OSError):
            return None
    return min(max(at, now_ms + 1000), now_ms + 24 * 3600 * 1000)


def parse_time(text: str) -> int | None:
    return wake_time(text)
