"""An app with one slow step, for shutdown tests: only its first execution is slow."""

import asyncio
import json
import os
from pathlib import Path

from fastapi import FastAPI
from weir.sdk import Context, Weir, serve

from tests.integration.apps.journal import note

weir = Weir(os.environ.get("APP_ID", "slowapp"))


def _executions(what: str) -> int:
    path = Path(os.environ.get("WEIR_TEST_JOURNAL", ""))
    if not path.is_file():
        return 0
    return sum(json.loads(line)["what"] == what for line in path.read_text().splitlines())


@weir.function("slow", event="t/slow", retries=0)
async def slow(ctx: Context) -> list[str]:
    async def first() -> str:
        note("first")
        return "first"

    async def slow_step() -> str:
        first_time = _executions("slow-begin") == 0
        note("slow-begin")
        if first_time:
            await asyncio.sleep(float(ctx.event.data["seconds"]))
        note("slow-end")
        return "slow"

    async def last() -> str:
        note("last")
        return "last"

    return [
        await ctx.step.run("first", first),
        await ctx.step.run("slow", slow_step),
        await ctx.step.run("last", last),
    ]


app = FastAPI()
serve(app, weir)
