"""Functions whose runs are read as traces (issue 37): steps, a failed attempt and its retry,
a sleep and an invoke. Each request the app is sent is journaled and traced in a span of the
app's own (traced_middleware.py)."""

import asyncio
import os
from typing import Any

from fastapi import FastAPI
from weir.sdk import Context, Throttle, Weir, serve

from tests.integration.apps.traced_middleware import instrument

weir = Weir(os.environ.get("APP_ID", "traced"))


@weir.function("traced-child", event="t/traced-child")
async def child(ctx: Context) -> int:
    return int(ctx.event.data["n"]) * 2


@weir.function("traced", event="t/traced", retries=2)
async def traced(ctx: Context) -> dict[str, Any]:
    loaded = await ctx.step.run("load", lambda: int(ctx.event.data["x"]) + 1)

    def flaky() -> str:
        if ctx.attempt == 0:
            raise ValueError("the first attempt fails")
        return "second time lucky"

    said = await ctx.step.run("flaky", flaky)
    await ctx.step.sleep("nap", "1s")
    doubled = await ctx.step.invoke("double", function=child, data={"n": loaded})
    return {"loaded": loaded, "said": said, "doubled": doubled}


@weir.function("quick", event="t/quick", retries=0)
async def quick(ctx: Context) -> int:
    return int(await ctx.step.run("one", lambda: 1))


@weir.function(
    "throttled", event="t/traced-throttle", throttle=Throttle(1, "2s", key="event.data.k")
)
async def throttled(ctx: Context) -> str:
    return str(ctx.event.data["k"])


@weir.function("dawdler", event="t/dawdle", retries=0)
async def dawdler(ctx: Context) -> str:
    async def dawdle() -> str:
        await asyncio.sleep(float(ctx.event.data.get("seconds", 2)))
        return "done"

    return str(await ctx.step.run("dawdle", dawdle))


app = FastAPI()
instrument(app)
serve(app, weir)
