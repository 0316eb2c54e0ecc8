"""Weir's Python SDK: declare durable functions, serve them, send events.

weir = Weir("my-app")

@weir.function("greet", event="app/user.created", retries=3)
async def greet(ctx: Context) -> str:
    name = await ctx.step.run("load", load_name, ctx.event.data["id"])
    await ctx.step.sleep("pause", "10s")
    return f"hello {name}"

serve(fastapi_app, weir)  # at /api/inngest

Reference: docs/sdk.md. A bare `§N` in this package cites docs/protocol.md §N.
"""

from weir.sdk._client import Weir
from weir.sdk._context import Context, ContextSync
from weir.sdk._declaring.function import Function
from weir.sdk._declaring.options import (
    Batch,
    Cancel,
    Checkpoint,
    Concurrency,
    Debounce,
    Lane,
    Priority,
    RateLimit,
    RollingWindow,
    Singleton,
    Throttle,
    Timeouts,
)
from weir.sdk._declaring.scopes import Scope
from weir.sdk._declaring.triggers import TriggerCron, TriggerEvent
from weir.sdk._errors import (
    InvalidFunctionsError,
    NoFencingToken,
    NonRetriableError,
    RetryAfterError,
    SendEventsError,
    StepError,
)
from weir.sdk._event import Event
from weir.sdk._serve import asgi_app, serve
from weir.sdk._steps.signal import Signal
from weir.sdk._steps.steps import Step, StepSync

__all__ = [
    "Batch",
    "Cancel",
    "Checkpoint",
    "Concurrency",
    "Context",
    "ContextSync",
    "Debounce",
    "Event",
    "Function",
    "InvalidFunctionsError",
    "Lane",
    "NoFencingToken",
    "NonRetriableError",
    "Priority",
    "RateLimit",
    "RetryAfterError",
    "RollingWindow",
    "Scope",
    "SendEventsError",
    "Signal",
    "Singleton",
    "Step",
    "StepError",
    "StepSync",
    "Throttle",
    "Timeouts",
    "TriggerCron",
    "TriggerEvent",
    "Weir",
    "asgi_app",
    "serve",
]
