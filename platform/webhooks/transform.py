"""A source's transform: CEL expressions over the delivery (`body`, `headers`, `query`) giving
the event's `name`, `data`, `id` and `ts`. Checked when the source is saved by the same checker
as every function expression, and evaluated under the same bounded budget (expressions/).

`data` that is only a field path (`body`, `body.data.object`) is taken from the body by
lookups, at any size the body cap allows; a computed `data` is bounded by the expression
result budget (64 KiB by default), as every expression result is."""

import asyncio
import re
from collections.abc import Mapping
from enum import StrEnum
from typing import Any

from weir.expressions import BudgetExceeded, EvaluationError, Expression, compile_expression
from weir.expressions import check_expression as check
from weir.platform.foundation.record_type import record

VARIABLES = ("body", "headers", "query")
_PATH = re.compile(r"(body|headers|query)(\.[_a-zA-Z][_a-zA-Z0-9]*)*")


class TransformReason(StrEnum):
    ERROR = "transform_error"  # an expression failed on this delivery, or gave a wrong type
    BUDGET = "transform_budget"  # an expression ran past its time, memory or result budget


class TransformFailed(Exception):
    def __init__(self, reason: TransformReason, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@record
class Transform:
    name: str
    data: str = "body"
    id: str | None = None
    ts: str | None = None


def transform_problems(transform: Transform) -> list[str]:
    return [
        f"transform.{field}: {problem}"
        for field, source in _fields(transform)
        for problem in check(source, VARIABLES)
    ]


def _fields(transform: Transform) -> list[tuple[str, str]]:
    found = [("name", transform.name), ("data", transform.data)]
    found += [(f, s) for f, s in (("id", transform.id), ("ts", transform.ts)) if s is not None]
    return found


async def apply(transform: Transform, activation: Mapping[str, Any]) -> dict[str, Any]:
    """The event object (`name`, `data`, and `id`, `ts` when the transform has them) as the
    ingest validates it; raises TransformFailed. Costly evaluations run off the event loop."""
    event: dict[str, Any] = {}
    for field, source in _fields(transform):
        path = _PATH.fullmatch(source) if field == "data" else None
        if path is not None:
            event[field] = _looked_up(source, activation)
            continue
        expression = compile_expression(source, VARIABLES)
        event[field] = await _evaluated(field, expression, activation)
    return _typed(event)


def _looked_up(source: str, activation: Mapping[str, Any]) -> Any:
    parts = source.split(".")
    value: Any = activation[parts[0]]
    for depth, name in enumerate(parts[1:], 1):
        if not isinstance(value, dict) or name not in value:
            where = ".".join(parts[:depth])
            raise TransformFailed(
                TransformReason.ERROR, f"transform.data: `{where}` has no field {name!r}"
            )
        value = value[name]
    return value


async def _evaluated(field: str, expression: Expression, activation: Mapping[str, Any]) -> Any:
    try:
        if expression.is_cheap(activation):
            return expression.evaluate(activation)
        return await asyncio.to_thread(expression.evaluate, activation)
    except BudgetExceeded as exc:
        raise TransformFailed(TransformReason.BUDGET, f"transform.{field}: {exc}") from None
    except EvaluationError as exc:
        raise TransformFailed(TransformReason.ERROR, f"transform.{field}: {exc}") from None


def _typed(event: dict[str, Any]) -> dict[str, Any]:
    """Types the event needs that CEL cannot promise: said here with the field's name."""
    if not isinstance(event["name"], str):
        raise _wrong("name", "a string", event["name"])
    if not isinstance(event["data"], dict):
        raise _wrong("data", 'a map (e.g. `{"payload": body}`)', event["data"])
    if "id" in event and event["id"] is not None and not isinstance(event["id"], str):
        if type(event["id"]) is int:
            event["id"] = str(event["id"])
        else:
            raise _wrong("id", "a string", event["id"])
    ts = event.get("ts")
    if ts is not None and (type(ts) is not int):
        raise _wrong("ts", "an integer of Unix milliseconds (e.g. `int(body.created) * 1000`)", ts)
    return event


def _wrong(field: str, wanted: str, got: Any) -> TransformFailed:
    return TransformFailed(
        TransformReason.ERROR,
        f"transform.{field} must give {wanted}, gave {type(got).__name__} {_short(got)}",
    )


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:79] + "…"
