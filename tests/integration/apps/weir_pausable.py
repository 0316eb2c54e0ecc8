"""Functions to pause and resume (issue 38 item 1): each notes its starts and steps in the
journal. `quick` runs at once, `paced` is throttled (5 per second, no burst), `stepped` has a
first step held in the app until its release file exists, then a second step."""

import asyncio
import os
import time
from pathlib import Path

from fastapi import FastAPI
from weir.sdk import Context, Throttle, Weir, serve

from tests.integration.apps.journal import note

weir = Weir(os.environ.get("APP_ID", "pausable"))


@weir.function("quick", event="t/quick", retries=0)
async def quick(ctx: Context) -> int:
    note("quick", n=ctx.event.data["n"], run=ctx.run_id, durable=True)
    return int(ctx.event.data["n"])


@weir.function("paced", event="t/paced", throttle=Throttle(5, "1s", burst=0), retries=0)
async def paced(ctx: Context) -> int:
    note("paced", n=ctx.event.data["n"], run=ctx.run_id, durable=True)
    return int(ctx.event.data["n"])


def _wait_for(release: Path) -> None:
    deadline = time.monotonic() + 60
    while not release.exists() and time.monotonic() < deadline:
        time.sleep(0.02)


async def _first(ctx: Context) -> str:
    note("one-begun", run=ctx.run_id, durable=True)
    await asyncio.to_thread(_wait_for, Path(str(ctx.event.data["release"])))
    return "one"


async def _second(ctx: Context) -> str:
    note("two", run=ctx.run_id, durable=True)
    return "two"


@weir.function("stepped", event="t/stepped", retries=0)
async def stepped(ctx: Context) -> list[str]:
    one = await ctx.step.run("one", _first, ctx)
    two = await ctx.step.run("two", _second, ctx)
    return [one, two]


app = FastAPI()
serve(app, weir)
