"""The integration functions, written with Weir's own SDK (twin of inngest_app.py)."""

import asyncio
import os
from datetime import timedelta
from typing import Any

from fastapi import FastAPI
from weir.sdk import Context, Event, NonRetriableError, RetryAfterError, StepError, Weir, serve

from tests.integration.apps.journal import note

# Dev or cloud mode (signatures checked) follows the environment, as for any user.
weir = Weir(os.environ.get("APP_ID", "weirapp"))


@weir.function("steps", event="t/steps")
async def steps(ctx: Context) -> dict[str, Any]:
    a = await ctx.step.run("a", lambda: ctx.event.data["x"] + 1)
    b1 = await ctx.step.run("b", lambda: "first")
    b2 = await ctx.step.run("b", lambda: "second")
    return {"a": a, "b": [b1, b2]}


@weir.function("greeter", event="t/greet")
async def greeter(ctx: Context) -> dict[str, Any]:
    word = await ctx.step.run("pick", lambda: "hello")
    return {"shout": await ctx.step.run("shout", str.upper, word)}  # weir.sdk sends ["hello"]


@weir.function("sleeper", event="t/sleep")
async def sleeper(ctx: Context) -> str:
    # a test cancelling the sleep asks for a long one: a busy machine must not wake it first
    await ctx.step.sleep("nap", f"{int(ctx.event.data.get('seconds', 1))}s")
    return "woke"


@weir.function("waiter", event="t/wait")
async def waiter(ctx: Context) -> Any:
    ev = await ctx.step.wait_for_event(
        "w",
        event="t/go",
        if_exp="async.data.k == event.data.k",
        timeout=f"{int(ctx.event.data.get('timeout_s', 3))}s",
    )
    return None if ev is None else ev.data


@weir.function("child", event="t/child")
async def child(ctx: Context) -> int:
    return int(ctx.event.data["n"]) * 2


@weir.function("parent", event="t/parent")
async def parent(ctx: Context) -> Any:
    return await ctx.step.invoke("call-child", function=child, data={"n": 21})


@weir.function("sender", event="t/send")
async def sender(ctx: Context) -> int:
    ids = await ctx.step.send_event("emit", Event(name="t/steps", data={"x": 41}))
    return len(ids)


@weir.function("flaky", event="t/flaky", retries=3)
async def flaky(ctx: Context) -> str:
    def attempt() -> str:
        note("flaky", attempt=ctx.attempt)
        if ctx.attempt < 2:
            raise ValueError(f"failing on attempt {ctx.attempt}")
        return f"ok on attempt {ctx.attempt}"

    return await ctx.step.run("f", attempt)


@weir.function("caught", event="t/caught", retries=1)
async def caught(ctx: Context) -> str:
    def boom() -> None:
        raise ValueError("always")

    try:
        await ctx.step.run("boom", boom)
    except StepError as exc:
        return f"caught: {exc}"
    return "not reached"


async def doomed_failed(ctx: Context) -> str:
    note("on_failure", run=ctx.event.data.get("run_id"), error=ctx.event.data.get("error"))
    return "handled"


@weir.function("doomed", event="t/doomed", retries=0, on_failure=doomed_failed)
async def doomed(ctx: Context) -> None:
    def boom() -> None:
        raise RuntimeError("doomed step")

    await ctx.step.run("boom", boom)


@weir.function("fanout", event="t/fanout")
async def fanout(ctx: Context) -> Any:
    both = await ctx.step.parallel(
        [lambda: ctx.step.run("p1", lambda: 1), lambda: ctx.step.run("p2", lambda: 2)]
    )
    return list(both)


@weir.function("racer", event="t/race")
async def racer(ctx: Context) -> Any:
    def fast() -> str:
        note("race", run=ctx.run_id, step="fast")
        return "fast"

    async def slow() -> str:
        note("race", run=ctx.run_id, step="slow")
        await asyncio.sleep(1.5)
        return "slow"

    return await ctx.step.race(
        "pick", [lambda: ctx.step.run("fast", fast), lambda: ctx.step.run("slow", slow)]
    )


@weir.function("later", event="t/later", retries=1)
async def later(ctx: Context) -> int:
    note("later", attempt=ctx.attempt)
    if ctx.attempt == 0:
        raise RetryAfterError("not yet", retry_after=timedelta(seconds=2))
    return ctx.attempt


@weir.function("nonretry", event="t/nonretry", retries=4)
async def nonretry(ctx: Context) -> None:
    note("nonretry", attempt=ctx.attempt)
    raise NonRetriableError("give up at once")


@weir.function("fnretry", event="t/fnretry", retries=2)
async def fnretry(ctx: Context) -> int:
    if ctx.attempt == 0:
        raise RuntimeError("first attempt fails")
    return ctx.attempt


@weir.function("durable", event="t/durable")
async def durable(ctx: Context) -> list[int]:
    done = []
    for i in range(6):

        async def work(i: int = i) -> int:
            note("durable", step=i, run=ctx.run_id)
            await asyncio.sleep(0.4)
            return i

        done.append(await ctx.step.run(f"s{i}", work))
    return done


@weir.function("bigstate", event="t/bigstate")
async def bigstate(ctx: Context) -> list[int]:
    # two 2.5 MiB steps: the third call's state is over 4 MiB, so the SDK fetches it itself
    a = await ctx.step.run("a", lambda: "a" * 2_500_000)
    b = await ctx.step.run("b", lambda: "b" * 2_500_000)
    return [len(a), len(b), ctx.attempt]


app = FastAPI()
serve(app, weir)
