"""Functions for bench_postgres.py (served by uvicorn): no-op ones with no steps and with ten,
for throughput; and one per limit, journaling what the app itself saw, for the audits that
check each limit stayed exact with several Weir processes on one database."""

import asyncio
import os

from fastapi import FastAPI
from weir.sdk import Concurrency, Context, RateLimit, Throttle, Weir, serve

from tests.integration.apps.journal import note

weir = Weir(os.environ.get("APP_ID", "pgbench"))
STEPS = 10
CONCURRENCY = 2  # step bodies of one key at once
THROTTLE = (10, 1, 1)  # limit, period s, burst
RATE_LIMIT = (5, 1)  # limit, period s
STEP_S = 0.02


def _nothing() -> None:
    return None


@weir.function("noop", event="pg/noop", retries=0)
async def noop(ctx: Context) -> None:
    return None


@weir.function("steps", event="pg/steps", retries=0)
async def steps(ctx: Context) -> int:
    for i in range(STEPS):
        await ctx.step.run(f"s{i}", _nothing)
    return STEPS


async def _work(ctx: Context, step: str) -> str:
    fields = {"run": ctx.run_id, "step": step, "attempt": ctx.attempt}
    note("begin", key=str(ctx.event.data["k"]), **fields)
    await asyncio.sleep(STEP_S)
    note("end", **fields)
    return step


@weir.function("keyed", event="pg/keyed", concurrency=Concurrency(CONCURRENCY, key="event.data.k"))
async def keyed(ctx: Context) -> list[str]:
    return [await ctx.step.run(f"s{i}", _work, ctx, f"s{i}") for i in range(2)]


@weir.function(
    "throttled",
    event="pg/throttled",
    throttle=Throttle(THROTTLE[0], f"{THROTTLE[1]}s", burst=THROTTLE[2], key="event.data.k"),
)
async def throttled(ctx: Context) -> None:
    note("call", run=ctx.run_id, key=str(ctx.event.data["k"]))


@weir.function(
    "limited",
    event="pg/limited",
    rate_limit=RateLimit(RATE_LIMIT[0], f"{RATE_LIMIT[1]}s", key="event.data.k"),
)
async def limited(ctx: Context) -> None:
    return None


app = FastAPI()
serve(app, weir)
