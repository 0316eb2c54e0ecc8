"""Functions for the capacity certification: FIFO lanes and three rolling-window meters.

Every call and step body is journaled, fsync'd, with its run, lane, place in the lane and
fencing token: the audits read both the app's own record and the store's ledger.
"""

import asyncio
import os
from datetime import timedelta

from fastapi import FastAPI
from weir.sdk import Context, RollingWindow, Weir, serve

from tests.integration.apps.journal import note

weir = Weir(os.environ.get("APP_ID", "capacity"))
STEP_S = 0.03
METERS = {"m10": 10, "m50": 50, "m100": 100}  # starts per second, each its own shared meter
WINDOW_MS = 1000


def _lane(ctx: Context) -> dict[str, object]:
    data = ctx.event.data
    return {"run": ctx.run_id, "lane": data.get("lane"), "n": data.get("n"), "attempt": ctx.attempt}


async def work(ctx: Context, step: str) -> str:
    note("begin", durable=True, step=step, **_lane(ctx))
    await asyncio.sleep(STEP_S)
    note("end", durable=True, step=step, **_lane(ctx))
    return step


@weir.function("laned", event="cap/laned", lane="event.data.lane", retries=2)
async def laned(ctx: Context) -> int:
    note("call", durable=True, fence=ctx.fence(), **_lane(ctx))
    await ctx.step.run("first", work, ctx, "first")
    await ctx.step.sleep("pause", timedelta(milliseconds=200))  # the lane holds through a sleep
    await ctx.step.run("second", work, ctx, "second")
    return int(ctx.event.data.get("n", 0))


def _metered(name: str, limit: int) -> None:
    window = RollingWindow(limit=limit, window=WINDOW_MS, rate_name=f"cert-{name}")

    @weir.function(name, event=f"cap/{name}", rolling_window=window)
    async def metered(ctx: Context) -> str:
        note("call", durable=True, run=ctx.run_id, meter=name, attempt=ctx.attempt)
        return name


for _name, _limit in METERS.items():
    _metered(_name, _limit)


@weir.function("probe", event="cap/probe")
async def probe(ctx: Context) -> str:
    return "ok"


app = FastAPI()
serve(app, weir)
