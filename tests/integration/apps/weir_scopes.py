"""Functions sharing two named concurrency scopes (Weir's SDK): `printer` (1 slot) and `paper`
(2 slots). `both` needs a slot of each; the journal notes when each step starts and ends."""

import asyncio
import os

from fastapi import FastAPI
from weir.sdk import Context, Scope, Weir, serve

from tests.integration.apps.journal import note

weir = Weir(os.environ.get("APP_ID", "scopes"))
HOLD_S = float(os.environ.get("SCOPES_HOLD_S", "0.6"))
PRINTER = Scope(name="printer", limit=1)
PAPER = Scope(name="paper", limit=2)


async def _hold(ctx: Context, fn: str) -> str:
    async def work() -> str:
        note("start", fn=fn, run=ctx.run_id, attempt=ctx.attempt)
        await asyncio.sleep(float(ctx.event.data.get("hold", HOLD_S)))
        note("end", fn=fn, run=ctx.run_id)
        return fn

    return str(await ctx.step.run("hold", work))


@weir.function("printer", event="t/printer", scopes=[PRINTER])
async def printer(ctx: Context) -> str:
    return await _hold(ctx, "printer")


@weir.function("both", event="t/both", scopes=[PRINTER, PAPER])
async def both(ctx: Context) -> str:
    return await _hold(ctx, "both")


@weir.function("paper", event="t/paper", scopes=[PAPER])
async def paper(ctx: Context) -> str:
    return await _hold(ctx, "paper")


@weir.function(
    "per-user", event="t/user", scopes=[Scope(key="event.data.user", limit=1)], retries=0
)
async def per_user(ctx: Context) -> str:
    return await _hold(ctx, "per-user")


app = FastAPI()
serve(app, weir)
