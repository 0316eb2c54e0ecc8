"""What a CEL query over runs or events sees: the documented, typed record of each row, and
the check that refuses a query before any row is read (docs/operations.md, Querying runs).

A run query sees the run's fields as top-level variables plus `event`, its triggering event;
an event query sees `event` and `received_at`. The text is checked by `weir.expressions` (the
checker every function config goes through: syntax, size, unknown names), then against these
types: a field of a scalar (`status.name`) or an unknown field of a known record
(`error.stack`, `event.payload`) is refused, naming what is allowed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from weir.expressions import (
    Expression,
    ExpressionError,
    LiteralKind,
    compile_expression,
    literal_comparisons,
)
from weir.platform.foundation.record_type import record
from weir.platform.foundation.vocabulary import RunStatus
from weir.platform.store.records.events import StoredEvent
from weir.platform.store.views.queries import ScannedRun


class FieldType(StrEnum):
    STRING = "string"
    INT = "int"  # milliseconds since the epoch for the *_at fields
    TIMESTAMP = "timestamp"
    ANY = "any JSON value"  # output, event.data: any shape below
    RECORD = "record"


@record
class Field:
    name: str
    kind: FieldType
    about: str
    fields: tuple[Field, ...] = ()  # a RECORD's own fields
    nullable: bool = False


_EVENT = Field(
    "event",
    FieldType.RECORD,
    "the event as the function receives it",
    (
        Field("name", FieldType.STRING, "the event's name"),
        Field("data", FieldType.ANY, "the event's data object"),
        Field("id", FieldType.STRING, "the event's id"),
        Field("ts", FieldType.INT, "the event's time, ms since the epoch"),
        Field("user", FieldType.ANY, "the event's user object", nullable=True),
        Field("v", FieldType.STRING, "the event's version", nullable=True),
    ),
)

RUN_FIELDS: tuple[Field, ...] = (
    Field("id", FieldType.STRING, "the run's id"),
    Field("status", FieldType.STRING, "QUEUED, RUNNING, COMPLETED, FAILED, CANCELLED or SKIPPED"),
    # `function` is a reserved word in CEL: no expression may name it
    Field("function_slug", FieldType.STRING, "the function's slug"),
    Field("function_id", FieldType.STRING, "the function's id"),
    Field("app", FieldType.STRING, "the name of the function's app"),
    Field("created_at", FieldType.INT, "when the run was queued, ms since the epoch"),
    Field("started_at", FieldType.INT, "when its first call started", nullable=True),
    Field("ended_at", FieldType.INT, "when it ended", nullable=True),
    Field("created", FieldType.TIMESTAMP, "created_at as a timestamp"),
    Field("started", FieldType.TIMESTAMP, "started_at as a timestamp", nullable=True),
    Field("ended", FieldType.TIMESTAMP, "ended_at as a timestamp", nullable=True),
    Field("attempt", FieldType.INT, "the highest attempt a call reached, 0 = the first"),
    Field("output", FieldType.ANY, "a completed run's return value", nullable=True),
    Field(
        "error",
        FieldType.RECORD,
        "a failed run's error",
        (
            Field("name", FieldType.STRING, "the error's name, e.g. Error"),
            Field("message", FieldType.STRING, "the error's message"),
        ),
        nullable=True,
    ),
    _EVENT,
)

EVENT_FIELDS: tuple[Field, ...] = (
    _EVENT,
    Field("received_at", FieldType.INT, "when Weir stored the event, ms since the epoch"),
)


@record
class FunctionNames:
    """How a query names a run's function: its slug and its app's name."""

    slug: str
    app: str


def compile_query(source: str, fields: tuple[Field, ...]) -> Expression:
    """The checked query; raises ExpressionError with every problem (the checker's words)."""
    try:
        expression = compile_expression(source, tuple(f.name for f in fields))
    except ExpressionError as error:
        named = ("unknown identifier `function`", "reserved identifier: function")
        if not any(word in p for p in error.problems for word in named):
            raise
        hint = "`function` is reserved in CEL; use `function_slug` or `function_id`"
        raise ExpressionError(source, hint, *error.problems) from None
    problems = [p for path in expression.paths for p in _path_problems(path, fields)]
    if not problems:
        problems = _literal_problems(expression, fields)
    if not problems and fields is RUN_FIELDS and "status" in {p[0] for p in expression.paths}:
        problems = _status_problems(expression)
    if problems:
        raise ExpressionError(source, *dict.fromkeys(problems))
    return expression


def _path_problems(path: tuple[str, ...], fields: tuple[Field, ...]) -> list[str]:
    known = {f.name: f for f in fields}
    field = known[path[0]]
    for depth, part in enumerate(path[1:], start=1):
        if field.kind == FieldType.ANY:
            return []
        where = ".".join(path[:depth])
        if field.kind != FieldType.RECORD:
            return [f"`{where}` is {_a(field.kind)}; it has no field `{part}`"]
        inner = {f.name: f for f in field.fields}
        if part not in inner:
            allowed = ", ".join(f"`{name}`" for name in inner)
            return [f"`{where}` has no field `{part}`; its fields are {allowed}"]
        field = inner[part]
    return []


# The literals each type of field can be compared with (null: any; it tests for absence).
_COMPARABLE = {
    FieldType.STRING: {LiteralKind.STRING},
    FieldType.INT: {LiteralKind.INT, LiteralKind.UINT, LiteralKind.DOUBLE},
    FieldType.TIMESTAMP: set(),
    FieldType.RECORD: set(),
}


def _literal_problems(expression: Expression, fields: tuple[Field, ...]) -> list[str]:
    """A field compared with a literal it can never equal or order against (`status == 1`,
    `created_at > "2026-01-01"`): refused, where it would otherwise match nothing."""
    free = {path[0] for path in expression.paths}  # not a comprehension's own variable
    problems = []
    for seen in literal_comparisons(expression.source):
        field = _field_at(seen.path, fields) if seen.path[0] in free else None
        if field is None or field.kind == FieldType.ANY or seen.kind == LiteralKind.NULL:
            continue
        if seen.kind in _COMPARABLE[field.kind]:
            continue
        name = ".".join(seen.path)
        hint = (
            ' (write timestamp("2026-12-01T00:00:00Z"))'
            if field.kind == FieldType.TIMESTAMP
            else ""
        )
        problems.append(
            f"`{name}` is {_a(field.kind)}; it cannot be compared with {seen.literal}, "
            f"{_a(seen.kind)}{hint}"
        )
    return problems


_PLAIN_STRING = re.compile(r"""^(?:"([^"\\]*)"|'([^'\\]*)')$""")


def plain_string(literal: str) -> str | None:
    """The value of a quoted CEL string literal without escapes; None for any other."""
    found = _PLAIN_STRING.match(literal)
    return None if found is None else (found.group(1) or found.group(2) or "")


_STATUSES = ", ".join(RunStatus)


def _status_problems(expression: Expression) -> list[str]:
    """`status == "failed"` would match nothing: the statuses are upper case words."""
    problems = []
    for seen in literal_comparisons(expression.source):
        value = plain_string(seen.literal) if seen.path == ("status",) else None
        if value is not None and value not in RunStatus.__members__:
            problems.append(f"`status` is one of {_STATUSES}; got {seen.literal}")
    return problems


def _a(word: str) -> str:
    return f"an {word}" if word[:1] in "aeiou" else f"a {word}"


def _field_at(path: tuple[str, ...], fields: tuple[Field, ...]) -> Field | None:
    found: Field | None = None
    for part in path:
        known = {f.name: f for f in (fields if found is None else found.fields)}
        if part not in known:
            return None
        found = known[part]
        if found.kind == FieldType.ANY:
            return found
    return found


def run_variables(
    run: ScannedRun,
    names: Mapping[str, FunctionNames],
    output: Any,
    event: Any,
    attempt: int,
) -> dict[str, Any]:
    """The run as a query sees it (`RUN_FIELDS`); `output` and `event` decoded (None when
    the query does not read them)."""
    named = names.get(run.function_id, FunctionNames(run.function_id, ""))
    failed = run.status == RunStatus.FAILED
    return {
        "id": run.id,
        "status": run.status,
        "function_slug": named.slug,
        "function_id": run.function_id,
        "app": named.app,
        "created_at": run.created_at,
        "started_at": run.started_at,
        "ended_at": run.ended_at,
        "created": _timestamp(run.created_at),
        "started": _timestamp(run.started_at),
        "ended": _timestamp(run.ended_at),
        "attempt": attempt,
        "output": None if failed else output,
        "error": _error(output) if failed else None,
        "event": event,
    }


def event_variables(event: StoredEvent) -> dict[str, Any]:
    """The event as a query sees it (`EVENT_FIELDS`)."""
    return {"event": event.payload, "received_at": event.received_at}


def _error(output: Any) -> dict[str, str]:
    found = output if isinstance(output, dict) else {}
    return {"name": str(found.get("name") or ""), "message": str(found.get("message") or "")}


def _timestamp(ms: int | None) -> datetime | None:
    return None if ms is None else datetime.fromtimestamp(ms / 1000, UTC)
