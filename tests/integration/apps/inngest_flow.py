"""Flow-control functions for the integration tests, official SDK (twin of weir_flow.py)."""

import asyncio
import datetime
import os
from typing import Any

import inngest
import inngest.fast_api
from fastapi import FastAPI

from tests.integration.apps.journal import note

client = inngest.Inngest(app_id=os.environ.get("APP_ID", "inngestflow"))
S = datetime.timedelta(seconds=1)


def on(name: str) -> inngest.TriggerEvent:
    return inngest.TriggerEvent(event=name)


async def _busy(ctx: inngest.Context, step: str) -> None:
    note("busy", run=ctx.run_id, step=step, k=ctx.event.data.get("k"), edge="start")
    await asyncio.sleep(0.3)
    note("busy", run=ctx.run_id, step=step, k=ctx.event.data.get("k"), edge="end")


@client.create_function(
    fn_id="conc",
    trigger=on("t/conc"),
    concurrency=[inngest.Concurrency(limit=2, key="event.data.k")],
)
async def conc(ctx: inngest.Context) -> str:
    await ctx.step.run("one", _busy, ctx, "one")
    await ctx.step.run("two", _busy, ctx, "two")
    return "ok"


@client.create_function(
    fn_id="throttled",
    trigger=on("t/throttle"),
    throttle=inngest.Throttle(limit=2, period=2 * S, burst=0),
)
async def throttled(ctx: inngest.Context) -> int:
    return int(ctx.event.data["n"])


@client.create_function(
    fn_id="limited", trigger=on("t/limit"), rate_limit=inngest.RateLimit(limit=2, period=2 * S)
)
async def limited(ctx: inngest.Context) -> int:
    return int(ctx.event.data["n"])


@client.create_function(
    fn_id="debounced",
    trigger=on("t/debounce"),
    debounce=inngest.Debounce(period=S, key="event.data.k"),
)
async def debounced(ctx: inngest.Context) -> Any:
    return ctx.event.data


@client.create_function(
    fn_id="batched", trigger=on("t/batch"), batch_events=inngest.Batch(max_size=3, timeout=S)
)
async def batched(ctx: inngest.Context) -> list[Any]:
    return [e.data["n"] for e in ctx.events]


@client.create_function(
    fn_id="single",
    trigger=on("t/single"),
    singleton=inngest.Singleton(mode="skip", key="event.data.k"),
)
async def single(ctx: inngest.Context) -> str:
    # long enough that a loaded machine cannot end the holder before the test's next event
    await ctx.step.sleep("hold", 3 * S)
    return "held"


@client.create_function(
    fn_id="cancellable",
    trigger=on("t/cancellable"),
    cancel=[inngest.Cancel(event="t/cancel", if_exp="event.data.id == async.data.id")],
)
async def cancellable(ctx: inngest.Context) -> str:
    await ctx.step.sleep("nap", 5 * S)  # room for the cancel to arrive on a loaded machine
    return "done"


@client.create_function(
    fn_id="prio",
    trigger=on("t/prio"),
    concurrency=[inngest.Concurrency(limit=1)],
    priority=inngest.Priority(run="event.data.p"),
)
async def prio(ctx: inngest.Context) -> int:
    await ctx.step.run("work", _busy, ctx, "work")
    return int(ctx.event.data["p"])


@client.create_function(fn_id="timed", trigger=on("t/timed"), timeouts=inngest.Timeouts(finish=S))
async def timed(ctx: inngest.Context) -> str:
    await ctx.step.sleep("long", 3 * S)
    return "finished"


app = FastAPI()
inngest.fast_api.serve(
    app, client, [conc, throttled, limited, debounced, batched, single, cancellable, prio, timed]
)
