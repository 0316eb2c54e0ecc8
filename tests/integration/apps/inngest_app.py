"""The integration functions, written with the official `inngest` SDK (twin of weir_app.py)."""

import asyncio
import datetime
import os
from typing import Any

import inngest
import inngest.fast_api
from fastapi import FastAPI

from tests.integration.apps.journal import note

# Dev or cloud mode (signatures checked) follows INNGEST_DEV, as for any user of the SDK.
client = inngest.Inngest(app_id=os.environ.get("APP_ID", "inngestapp"))


def trigger(name: str) -> inngest.TriggerEvent:
    return inngest.TriggerEvent(event=name)


@client.create_function(fn_id="steps", trigger=trigger("t/steps"))
async def steps(ctx: inngest.Context) -> dict[str, Any]:
    a = await ctx.step.run("a", lambda: ctx.event.data["x"] + 1)
    b1 = await ctx.step.run("b", lambda: "first")
    b2 = await ctx.step.run("b", lambda: "second")
    return {"a": a, "b": [b1, b2]}


@client.create_function(fn_id="greeter", trigger=trigger("t/greet"))
async def greeter(ctx: inngest.Context) -> dict[str, Any]:
    word = await ctx.step.run("pick", lambda: "hello")
    return {"shout": await ctx.step.run("shout", str.upper, word)}  # its argument goes unsaid


@client.create_function(fn_id="sleeper", trigger=trigger("t/sleep"))
async def sleeper(ctx: inngest.Context) -> str:
    # a test cancelling the sleep asks for a long one: a busy machine must not wake it first
    await ctx.step.sleep("nap", datetime.timedelta(seconds=int(ctx.event.data.get("seconds", 1))))
    return "woke"


@client.create_function(fn_id="waiter", trigger=trigger("t/wait"))
async def waiter(ctx: inngest.Context) -> Any:
    ev = await ctx.step.wait_for_event(
        "w",
        event="t/go",
        if_exp="async.data.k == event.data.k",
        timeout=datetime.timedelta(seconds=int(ctx.event.data.get("timeout_s", 3))),
    )
    return None if ev is None else ev.data


@client.create_function(fn_id="child", trigger=trigger("t/child"))
async def child(ctx: inngest.Context) -> int:
    return int(ctx.event.data["n"]) * 2


@client.create_function(fn_id="parent", trigger=trigger("t/parent"))
async def parent(ctx: inngest.Context) -> Any:
    return await ctx.step.invoke("call-child", function=child, data={"n": 21})


@client.create_function(fn_id="sender", trigger=trigger("t/send"))
async def sender(ctx: inngest.Context) -> int:
    ids = await ctx.step.send_event("emit", inngest.Event(name="t/steps", data={"x": 41}))
    return len(ids)


@client.create_function(fn_id="flaky", trigger=trigger("t/flaky"), retries=3)
async def flaky(ctx: inngest.Context) -> str:
    def attempt() -> str:
        note("flaky", attempt=ctx.attempt)
        if ctx.attempt < 2:
            raise ValueError(f"failing on attempt {ctx.attempt}")
        return f"ok on attempt {ctx.attempt}"

    return await ctx.step.run("f", attempt)


@client.create_function(fn_id="caught", trigger=trigger("t/caught"), retries=1)
async def caught(ctx: inngest.Context) -> str:
    def boom() -> None:
        raise ValueError("always")

    try:
        await ctx.step.run("boom", boom)
    except inngest.StepError as exc:
        return f"caught: {exc}"
    return "not reached"


async def doomed_failed(ctx: inngest.Context) -> str:
    note("on_failure", run=ctx.event.data.get("run_id"), error=ctx.event.data.get("error"))
    return "handled"


@client.create_function(
    fn_id="doomed", trigger=trigger("t/doomed"), retries=0, on_failure=doomed_failed
)
async def doomed(ctx: inngest.Context) -> None:
    def boom() -> None:
        raise RuntimeError("doomed step")

    await ctx.step.run("boom", boom)


@client.create_function(fn_id="fanout", trigger=trigger("t/fanout"))
async def fanout(ctx: inngest.Context) -> Any:
    both = await ctx.group.parallel(
        (lambda: ctx.step.run("p1", lambda: 1), lambda: ctx.step.run("p2", lambda: 2))
    )
    return list(both)


@client.create_function(fn_id="racer", trigger=trigger("t/race"))
async def racer(ctx: inngest.Context) -> Any:
    def fast() -> str:
        note("race", run=ctx.run_id, step="fast")
        return "fast"

    async def slow() -> str:
        note("race", run=ctx.run_id, step="slow")
        await asyncio.sleep(1.5)
        return "slow"

    return await ctx.group.parallel(
        (lambda: ctx.step.run("fast", fast), lambda: ctx.step.run("slow", slow)),
        parallel_mode=inngest.ParallelMode.RACE,
    )


@client.create_function(fn_id="later", trigger=trigger("t/later"), retries=1)
async def later(ctx: inngest.Context) -> int:
    note("later", attempt=ctx.attempt)
    if ctx.attempt == 0:
        raise inngest.RetryAfterError("not yet", datetime.timedelta(seconds=2))
    return ctx.attempt


@client.create_function(fn_id="nonretry", trigger=trigger("t/nonretry"), retries=4)
async def nonretry(ctx: inngest.Context) -> None:
    note("nonretry", attempt=ctx.attempt)
    raise inngest.NonRetriableError("give up at once")


@client.create_function(fn_id="dawdler", trigger=trigger("t/dawdle"))
async def dawdler(ctx: inngest.Context) -> str:
    await ctx.step.sleep("long", datetime.timedelta(seconds=60))
    return "late"


@client.create_function(fn_id="impatient", trigger=trigger("t/impatient"), retries=0)
async def impatient(ctx: inngest.Context) -> object:
    # the invoke times out: the SDK re-raises Weir's error, which has no stack ("stack": null)
    return await ctx.step.invoke("ask", function=dawdler, timeout=datetime.timedelta(seconds=1))


@client.create_function(fn_id="fnretry", trigger=trigger("t/fnretry"), retries=2)
async def fnretry(ctx: inngest.Context) -> int:
    if ctx.attempt == 0:
        raise RuntimeError("first attempt fails")
    return ctx.attempt


@client.create_function(fn_id="durable", trigger=trigger("t/durable"))
async def durable(ctx: inngest.Context) -> list[int]:
    done = []
    for i in range(6):

        async def work(i: int = i) -> int:
            note("durable", step=i, run=ctx.run_id)
            await asyncio.sleep(0.4)
            return i

        done.append(await ctx.step.run(f"s{i}", work))
    return done


@client.create_function(fn_id="bigstate", trigger=trigger("t/bigstate"))
async def bigstate(ctx: inngest.Context) -> list[int]:
    # two 2.5 MiB steps: the third call's state is over 4 MiB, so the SDK fetches it itself
    a = await ctx.step.run("a", lambda: "a" * 2_500_000)
    b = await ctx.step.run("b", lambda: "b" * 2_500_000)
    return [len(a), len(b), ctx.attempt]


app = FastAPI()
inngest.fast_api.serve(
    app,
    client,
    [
        steps,
        greeter,
        sleeper,
        waiter,
        child,
        parent,
        sender,
        flaky,
        caught,
        doomed,
        fanout,
        racer,
        later,
        nonretry,
        fnretry,
        dawdler,
        impatient,
        durable,
        bigstate,
    ],
)
