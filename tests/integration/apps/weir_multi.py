"""Functions for the several-processes test: keyed concurrency, a keyed throttle and a keyed
rate limit. Every step body journals when it begins and ends, so the test can tell whether a
step ran again after its result was committed, and how many ran at once per key."""

import asyncio
import os

from fastapi import FastAPI
from weir.sdk import Concurrency, Context, RateLimit, Throttle, Weir, serve

from tests.integration.apps.journal import note

weir = Weir(os.environ.get("APP_ID", "multi"))
STEP_S = 0.08


async def body(ctx: Context, step: str) -> str:
    note("begin", run=ctx.run_id, step=step)
    await asyncio.sleep(STEP_S)
    note("end", run=ctx.run_id, step=step)
    return step


@weir.function("keyed", event="m/keyed", concurrency=[Concurrency(2, key="event.data.k")])
async def keyed(ctx: Context) -> list[str]:
    return [await ctx.step.run(f"s{i}", body, ctx, f"s{i}") for i in range(3)]


@weir.function(
    "throttled", event="m/throttled", throttle=Throttle(5, "1s", burst=1, key="event.data.k")
)
async def throttled(ctx: Context) -> str:
    return await ctx.step.run("t", body, ctx, "t")


@weir.function("limited", event="m/limited", rate_limit=RateLimit(4, "1s", key="event.data.k"))
async def limited(ctx: Context) -> str:
    return await ctx.step.run("r", body, ctx, "r")


@weir.function("probe", event="m/probe")
async def probe(ctx: Context) -> str:
    return "here"


app = FastAPI()
serve(app, weir)
