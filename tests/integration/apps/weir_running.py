"""Calls that stay in the app until the test lets them go (issue 36, items 1-4): each step
body journals its run, step and fencing tokens as it begins and ends, and waits for its
release file to exist."""

import asyncio
import os
import time
from pathlib import Path

from fastapi import FastAPI
from weir.sdk import Concurrency, Context, Weir, serve

from tests.integration.apps.journal import note

weir = Weir(os.environ.get("APP_ID", "running"))


async def _held(ctx: Context, step: str) -> str:
    fields = {"run": ctx.run_id, "step": step, "fences": dict(ctx.fences)}
    note("begin", durable=True, **fields)
    await asyncio.to_thread(_wait_for, Path(str(ctx.event.data["release"])))
    note("end", durable=True, **fields)
    return step


def _wait_for(release: Path) -> None:
    while not release.exists():
        time.sleep(0.02)


@weir.function("held", event="t/held", lane="event.data.k", retries=0)
async def held(ctx: Context) -> str:
    """Its first call runs step "work" at once, in the app until released."""
    return await ctx.step.run("work", _held, ctx, "work")


@weir.function("later", event="t/later", retries=0)
async def later(ctx: Context) -> list[str]:
    """A quick first step, then a later one held in the app: alone, or two planned in
    parallel (`data.parallel`)."""
    await ctx.step.run("first", lambda: "quick")
    if ctx.event.data.get("parallel"):
        both = await ctx.step.parallel(
            [
                lambda: ctx.step.run("left", _held, ctx, "left"),
                lambda: ctx.step.run("right", _held, ctx, "right"),
            ]
        )
        return list(both)
    return [await ctx.step.run("second", _held, ctx, "second")]


@weir.function("single", event="t/single", retries=0, concurrency=Concurrency(1))
async def single(ctx: Context) -> str:
    """One call at a time, as declared (a live capacity may raise it)."""
    return await ctx.step.run("work", _held, ctx, "work")


app = FastAPI()
serve(app, weir)
