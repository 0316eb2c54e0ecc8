"""A laned function with the official SDK (twin of weir_lanes.py): the lane comes from
weir.sdk.official.weir_options, the fence from the job id (weir.sdk.official.fence)."""

import asyncio
import datetime
import os

import inngest
import inngest.fast_api
from fastapi import FastAPI
from weir.sdk.official import fence, weir_options

from tests.integration.apps.journal import note

client = inngest.Inngest(app_id=os.environ.get("APP_ID", "inngestlanes"))


async def _work(ctx: inngest.Context, step: str) -> None:
    data = ctx.event.data
    fields = {"run": ctx.run_id, "k": data["k"], "n": data["n"], "fence": fence(ctx)}
    note("lane", step=step, attempt=ctx.attempt, edge="start", durable=True, **fields)
    await asyncio.sleep(0.05)
    if step == "work" and int(data["n"]) % 3 == 1 and ctx.attempt == 0:  # type: ignore[call-overload]
        raise inngest.RetryAfterError("fails once", datetime.timedelta(seconds=1))
    note("lane", step=step, attempt=ctx.attempt, edge="end", durable=True, **fields)


@weir_options(lane="event.data.k")
@client.create_function(fn_id="laned", trigger=inngest.TriggerEvent(event="t/lane"), retries=2)
async def laned(ctx: inngest.Context) -> int:
    await ctx.step.run("work", _work, ctx, "work")
    if int(ctx.event.data["n"]) % 2 == 0:  # type: ignore[call-overload]
        await ctx.step.sleep("nap", datetime.timedelta(seconds=1))
    await ctx.step.run("after", _work, ctx, "after")
    return int(ctx.event.data["n"])  # type: ignore[call-overload]


async def _fenced(ctx: inngest.Context, step: str) -> None:
    token = fence(ctx, "concurrency0")
    note("single", run=ctx.run_id, k=ctx.event.data["k"], step=step, fence=token, durable=True)


@client.create_function(
    fn_id="single",
    trigger=inngest.TriggerEvent(event="t/single"),
    concurrency=[inngest.Concurrency(limit=1, key="event.data.k")],
)
async def single(ctx: inngest.Context) -> None:
    await ctx.step.run("one", _fenced, ctx, "one")
    await ctx.step.run("two", _fenced, ctx, "two")


app = FastAPI()
inngest.fast_api.serve(app, client, [laned, single])
