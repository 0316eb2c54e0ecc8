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

from ._client import Weir
from ._context import Context, ContextSync
from ._errors import (
    InvalidFunctionsError,
    NonRetriableError,
    RetryAfterError,
    SendEventsError,
    StepError,
)
from ._event import Event
from ._function import Function
from ._options import (
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
from ._scopes import Scope
from ._serve import asgi_app, serve
from ._steps import Step, StepSync
from ._triggers import TriggerCron, TriggerEvent

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
    "NonRetriableError",
    "Priority",
    "RateLimit",
    "RetryAfterError",
    "RollingWindow",
    "Scope",
    "SendEventsError",
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
