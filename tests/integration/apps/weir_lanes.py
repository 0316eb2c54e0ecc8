"""A laned function with Weir's SDK (twin of inngest_lanes.py): every step body journals its
run, lane, place in line and fence; some runs fail once and are retried, some sleep."""

import asyncio
import datetime
import os

from fastapi import FastAPI
from weir.sdk import Concurrency, Context, RetryAfterError, Weir, serve

from tests.integration.apps.journal import note

weir = Weir(os.environ.get("APP_ID", "weirlanes"))


async def _work(ctx: Context, step: str) -> None:
    data = ctx.event.data
    fields = {"run": ctx.run_id, "k": data["k"], "n": data["n"], "fence": ctx.fence()}
    note("lane", step=step, attempt=ctx.attempt, edge="start", durable=True, **fields)
    await asyncio.sleep(0.05)
    if step == "work" and data["n"] % 3 == 1 and ctx.attempt == 0:
        raise RetryAfterError("fails once", datetime.timedelta(seconds=1))
    note("lane", step=step, attempt=ctx.attempt, edge="end", durable=True, **fields)


@weir.function("laned", event="t/lane", lane="event.data.k", retries=2)
async def laned(ctx: Context) -> int:
    await ctx.step.run("work", _work, ctx, "work")
    if ctx.event.data["n"] % 2 == 0:
        await ctx.step.sleep("nap", "1s")
    await ctx.step.run("after", _work, ctx, "after")
    return int(ctx.event.data["n"])


async def _fenced(ctx: Context, step: str) -> None:
    token = ctx.fence("concurrency0")
    note("single", run=ctx.run_id, k=ctx.event.data["k"], step=step, fence=token, durable=True)


@weir.function("single", event="t/single", concurrency=Concurrency(1, key="event.data.k"))
async def single(ctx: Context) -> None:
    await ctx.step.run("one", _fenced, ctx, "one")
    await ctx.step.run("two", _fenced, ctx, "two")


app = FastAPI()
serve(app, weir)
