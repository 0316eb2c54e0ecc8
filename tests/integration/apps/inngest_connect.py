"""A worker of the official `inngest` SDK that connects out to Weir (`inngest.connect`):
nothing listens on a port. Each step body appends a journal line, so tests count executions.

Run as `python -m tests.integration.apps.inngest_connect`; INNGEST_DEV points it at Weir.
`app` serves the same functions over HTTP (uvicorn), which bench/bench_connect.py compares.
"""

import asyncio
import datetime
import os
from typing import Any

import inngest
import inngest.fast_api
from fastapi import FastAPI
from inngest.connect import connect

from tests.integration.apps.journal import note

client = inngest.Inngest(app_id=os.environ.get("APP_ID", "connectapp"))
STEP_S = float(os.environ.get("STEP_SECONDS", "0"))  # how long each "slow" step works


PREFIX = os.environ.get("EVENT_PREFIX", "c")  # the bench gives its HTTP twin other events


def trigger(name: str) -> inngest.TriggerEvent:
    return inngest.TriggerEvent(event=name.replace("c/", f"{PREFIX}/", 1))


@client.create_function(fn_id="steps", trigger=trigger("c/steps"))
async def steps(ctx: inngest.Context) -> dict[str, Any]:
    def add() -> int:
        note("step", run=ctx.run_id, step="a")
        return int(ctx.event.data["x"]) + 1

    def double(a: int) -> int:
        note("step", run=ctx.run_id, step="b")
        return a * 2

    a = await ctx.step.run("a", add)
    b = await ctx.step.run("b", lambda: double(a))
    return {"a": a, "b": b}


@client.create_function(fn_id="sleeper", trigger=trigger("c/sleep"))
async def sleeper(ctx: inngest.Context) -> str:
    before = await ctx.step.run("before", lambda: note("step", run=ctx.run_id, step="before"))
    seconds = float(ctx.event.data.get("seconds", 1))
    await ctx.step.sleep("nap", datetime.timedelta(seconds=seconds))
    await ctx.step.run("after", lambda: note("step", run=ctx.run_id, step="after"))
    return "woke" if before is None else "?"


@client.create_function(fn_id="waiter", trigger=trigger("c/wait"))
async def waiter(ctx: inngest.Context) -> Any:
    ev = await ctx.step.wait_for_event(
        "w",
        event="c/go",
        if_exp="async.data.k == event.data.k",
        timeout=datetime.timedelta(seconds=20),
    )
    return None if ev is None else ev.data


@client.create_function(fn_id="flaky", trigger=trigger("c/flaky"), retries=3)
async def flaky(ctx: inngest.Context) -> str:
    def attempt() -> str:
        note("flaky", run=ctx.run_id, attempt=ctx.attempt)
        if ctx.attempt < 2:
            raise ValueError(f"failing on attempt {ctx.attempt}")
        return f"ok on attempt {ctx.attempt}"

    return await ctx.step.run("f", attempt)


@client.create_function(fn_id="slow", trigger=trigger("c/slow"))
async def slow(ctx: inngest.Context) -> list[int]:
    """Steps that each work STEP_S seconds: long enough to restart things in the middle."""
    done = []
    for i in range(int(ctx.event.data.get("steps", 4))):

        async def work(i: int = i) -> int:
            note("slow", run=ctx.run_id, step=i, phase="start")
            await asyncio.sleep(STEP_S)
            note("slow", run=ctx.run_id, step=i, phase="end")
            return i

        done.append(await ctx.step.run(f"s{i}", work))
    return done


@client.create_function(fn_id="nonretry", trigger=trigger("c/nonretry"), retries=2)
async def nonretry(ctx: inngest.Context) -> None:
    raise inngest.NonRetriableError("give up at once")


@client.create_function(fn_id="dawdler", trigger=trigger("c/dawdle"))
async def dawdler(ctx: inngest.Context) -> str:
    await ctx.step.sleep("long", datetime.timedelta(seconds=60))
    return "late"


@client.create_function(fn_id="impatient", trigger=trigger("c/impatient"), retries=0)
async def impatient(ctx: inngest.Context) -> object:
    # the invoke times out: the SDK re-raises Weir's error, which has no stack ("stack": null)
    return await ctx.step.invoke("ask", function=dawdler, timeout=datetime.timedelta(seconds=1))


FUNCTIONS = [steps, sleeper, waiter, flaky, slow, nonretry, dawdler, impatient]
app = FastAPI()
inngest.fast_api.serve(app, client, FUNCTIONS)


async def main() -> None:
    await connect([(client, FUNCTIONS)], instance_id=os.environ.get("INSTANCE_ID")).start()


if __name__ == "__main__":
    asyncio.run(main())
