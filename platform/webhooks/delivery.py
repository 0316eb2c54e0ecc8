"""One delivery as received: the raw body, the headers (lower-case names) and the query, and
what the transform sees of it: `body` parsed by its content type (JSON; a form as a map of
its fields; any other text as a string), `headers` and `query` as maps of strings."""

import json
from collections.abc import Iterable
from enum import StrEnum
from typing import Any
from urllib.parse import parse_qsl

from weir.platform.foundation import jsonvalues
from weir.platform.foundation.record_type import record


class Status(StrEnum):
    ACCEPTED = "accepted"
    REFUSED = "refused"
    REPLAYED = "replayed"  # refused, then accepted when an operator replayed it


class Reason(StrEnum):
    """Why a delivery was refused (the verification's own reasons are `Refusal`'s values)."""

    MISSING_SIGNATURE = "missing_signature"
    BAD_SIGNATURE = "bad_signature"
    STALE_TIMESTAMP = "stale_timestamp"
    FUTURE_TIMESTAMP = "future_timestamp"
    TOO_LARGE = "too_large"
    UNREADABLE_BODY = "unreadable_body"  # declared JSON that is not, or not UTF-8 text
    TRANSFORM_ERROR = "transform_error"
    TRANSFORM_BUDGET = "transform_budget"
    INVALID_EVENT = "invalid_event"  # the transform gave an event the ingest refuses


# Refused for what the source's transform made of a verified delivery: an operator may
# replay these once the transform is fixed. A failed signature is never replayed.
REPLAYABLE = frozenset({Reason.TRANSFORM_ERROR, Reason.TRANSFORM_BUDGET, Reason.INVALID_EVENT})
MAX_HEADER_BYTES = 16 * 1024  # what is kept of the headers for a replay


@record
class Received:
    body: bytes
    headers: dict[str, str]
    query: dict[str, str]


class Unreadable(ValueError):
    pass


def received(
    body: bytes, headers: Iterable[tuple[str, str]], query: Iterable[tuple[str, str]]
) -> Received:
    joined: dict[str, str] = {}
    for name, value in headers:
        key = name.lower()
        joined[key] = f"{joined[key]}, {value}" if key in joined else value
    first: dict[str, str] = {}
    for name, value in query:
        first.setdefault(name, value)
    return Received(body, joined, first)


def activation(delivery: Received) -> dict[str, Any]:
    """What the transform's expressions see; raises Unreadable."""
    return {"body": parsed_body(delivery), "headers": delivery.headers, "query": delivery.query}


def parsed_body(delivery: Received) -> Any:
    kind = delivery.headers.get("content-type", "").split(";")[0].strip().lower()
    try:
        text = delivery.body.decode("utf-8")
    except UnicodeDecodeError:
        raise Unreadable("the body is not UTF-8 text") from None
    if kind == "application/x-www-form-urlencoded":
        return dict(parse_qsl(text, keep_blank_values=True))
    if kind == "application/json" or kind.endswith("+json") or (not kind and _looks_json(text)):
        try:
            value = jsonvalues.loads(delivery.body)
        except ValueError as exc:
            raise Unreadable(f"the body is declared JSON but is not ({exc})") from None
        problem = jsonvalues.problem(value)
        if problem:
            raise Unreadable(f"the body holds a value Weir cannot keep: {problem}")
        return value
    return text


def _looks_json(text: str) -> bool:
    return text.lstrip()[:1] in ("{", "[")


def headers_json(delivery: Received) -> str:
    text = json.dumps(delivery.headers, sort_keys=True)
    return text if len(text) <= MAX_HEADER_BYTES else json.dumps({"_truncated": True})
