"""No-op functions for bench_postgres.py: one with no steps, one with ten (served by uvicorn)."""

import os

from fastapi import FastAPI
from weir.sdk import Context, Weir, serve

weir = Weir(os.environ.get("APP_ID", "pgbench"))
STEPS = 10


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


app = FastAPI()
serve(app, weir)
