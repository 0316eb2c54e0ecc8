"""The invocation request body (§7.2), parsed as strictly as the official SDK does."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict
from weir.sdk._event import Event


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore")


class CallStack(_Strict):
    stack: list[str] | None = None
    current: int | None = None


class CallContext(_Strict):
    run_id: str
    attempt: int
    max_attempts: int | None = None
    disable_immediate_execution: bool
    stack: CallStack
    fences: dict[str, int] | None = None  # Weir: fencing tokens the run holds, by scope


class InvocationRequest(_Strict):
    event: Event
    events: list[Event] | None = None  # required in practice; checked by `require_events`
    steps: dict[str, Any]
    ctx: CallContext
    use_api: bool


class EventsMissingError(Exception):
    """A body without `events` (or with null) cannot run a function."""


def parse_invocation(body: bytes) -> InvocationRequest:
    request = InvocationRequest.model_validate_json(body)
    if request.events is None:
        raise EventsMissingError("events not in request")
    return request
