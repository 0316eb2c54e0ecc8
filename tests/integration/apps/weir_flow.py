"""Flow-control functions for the integration tests, with Weir's SDK (twin of inngest_flow.py)."""

import asyncio
import os
from typing import Any

from fastapi import FastAPI
from weir.sdk import (
    Batch,
    Cancel,
    Concurrency,
    Context,
    Debounce,
    Priority,
    RateLimit,
    Singleton,
    Throttle,
    Timeouts,
    Weir,
    serve,
)

from tests.integration.apps.journal import note

weir = Weir(os.environ.get("APP_ID", "weirflow"))


async def _busy(ctx: Context, step: str) -> None:
    note("busy", run=ctx.run_id, step=step, k=ctx.event.data.get("k"), edge="start")
    await asyncio.sleep(0.3)
    note("busy", run=ctx.run_id, step=step, k=ctx.event.data.get("k"), edge="end")


@weir.function("conc", event="t/conc", concurrency=Concurrency(2, key="event.data.k"))
async def conc(ctx: Context) -> str:
    await ctx.step.run("one", _busy, ctx, "one")
    await ctx.step.run("two", _busy, ctx, "two")
    return "ok"


@weir.function("throttled", event="t/throttle", throttle=Throttle(2, "2s", burst=0))
async def throttled(ctx: Context) -> int:
    return int(ctx.event.data["n"])


@weir.function("limited", event="t/limit", rate_limit=RateLimit(2, "2s"))
async def limited(ctx: Context) -> int:
    return int(ctx.event.data["n"])


@weir.function("debounced", event="t/debounce", debounce=Debounce("1s", key="event.data.k"))
async def debounced(ctx: Context) -> Any:
    return ctx.event.data


@weir.function("batched", event="t/batch", batch_events=Batch(3, "1s"))
async def batched(ctx: Context) -> list[Any]:
    return [e.data["n"] for e in ctx.events]


@weir.function("single", event="t/single", singleton=Singleton("skip", key="event.data.k"))
async def single(ctx: Context) -> str:
    # long enough that a loaded machine cannot end the holder before the test's next event
    await ctx.step.sleep("hold", "3s")
    return "held"


@weir.function("cancellable", event="t/cancellable", cancel_on=Cancel("t/cancel", match="data.id"))
async def cancellable(ctx: Context) -> str:
    await ctx.step.sleep("nap", "5s")  # room for the cancel to arrive on a loaded machine
    return "done"


@weir.function(
    "prio", event="t/prio", concurrency=Concurrency(1), priority=Priority("event.data.p")
)
async def prio(ctx: Context) -> int:
    await ctx.step.run("work", _busy, ctx, "work")
    return int(ctx.event.data["p"])


@weir.function("timed", event="t/timed", timeouts=Timeouts(finish="1s"))
async def timed(ctx: Context) -> str:
    await ctx.step.sleep("long", "3s")
    return "finished"


app = FastAPI()
serve(app, weir)
