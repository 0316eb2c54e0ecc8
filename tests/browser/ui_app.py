"""The app the browser tests drive: one function per thing the UI must show."""

import asyncio
from typing import Any

from fastapi import FastAPI
from weir.sdk import (
    Batch,
    Cancel,
    Concurrency,
    Context,
    Debounce,
    RateLimit,
    RollingWindow,
    Scope,
    Throttle,
    Weir,
    serve,
)

client = Weir("ui-test", dev=True)


@client.function("greet", name="Greet", event="ui/greet", retries=0)
async def greet(ctx: Context) -> dict[str, Any]:
    who = await ctx.step.run("look-up", lambda: str(ctx.event.data.get("who", "world")))
    line = await ctx.step.run("compose", lambda: f"hello {who}")
    return {"greeting": line}


@client.function("nap", name="Nap", event="ui/nap")
async def nap(ctx: Context) -> str:
    await ctx.step.sleep("long-nap", "1h")
    return "rested"


def _explode() -> None:
    raise RuntimeError("the upstream said no")


@client.function("fail", name="Always fails", event="ui/fail", retries=0)
async def fail(ctx: Context) -> None:
    await ctx.step.run("call-upstream", _explode)


@client.function("shout", name="Shout", event="ui/shout", retries=0)
async def shout(ctx: Context) -> str:
    word = await ctx.step.run("pick", lambda: str(ctx.event.data.get("word", "hello")))
    return await ctx.step.run("loud", str.upper, word)  # its argument is its input


def _refuse() -> None:
    raise RuntimeError("the ledger is closed")


@client.function("give-up", name="Gives up", event="ui/give-up", retries=2)
async def give_up(ctx: Context) -> None:
    await ctx.step.run("post-ledger", _refuse)  # the same error on every attempt


@client.function(
    "slow-lane",
    name="Throttled",
    event="ui/throttled",
    throttle=Throttle(limit=1, period="1h"),
)
async def throttled(ctx: Context) -> str:
    return "through"


@client.function(
    "limited", name="Rate limited", event="ui/limited", rate_limit=RateLimit(limit=1, period="1h")
)
async def limited(ctx: Context) -> str:
    return "once an hour"


def _decline(attempt: int) -> str:
    if attempt < 2:
        raise ValueError(f"card declined on attempt {attempt + 1}")
    return "charged"


@client.function("flaky", name="Flaky", event="ui/flaky", retries=3)
async def flaky(ctx: Context) -> str:
    await ctx.step.run("charge", _decline, ctx.attempt)
    return "paid"


@client.function("waiter", name="Waiter", event="ui/wait")
async def waiter(ctx: Context) -> Any:
    timeout = str(ctx.event.data.get("timeout", "1h"))
    got = await ctx.step.wait_for_event(
        "approval", event="ui/approve", timeout=timeout, if_exp="async.data.n == event.data.n"
    )
    return {"approved": got is not None}


@client.function("child", name="Child", event="ui/child")
async def child(ctx: Context) -> dict[str, Any]:
    return {"doubled": int(ctx.event.data.get("n", 0)) * 2}


@client.function("parent", name="Parent", event="ui/parent")
async def parent(ctx: Context) -> Any:
    return await ctx.step.invoke("ask-child", function=child, data={"n": 21})


async def _hold(seconds: float) -> str:
    await asyncio.sleep(seconds)
    return "held"


@client.function(
    "hold",
    name="Holds a slot",
    event="ui/hold",
    retries=0,
    concurrency=Concurrency(limit=1, key="event.data.team"),
)
async def hold(ctx: Context) -> str:
    return await ctx.step.run("work", _hold, float(ctx.event.data.get("secs", 5)))


@client.function(
    "stoppable",
    name="Stoppable",
    event="ui/stoppable",
    cancel_on=Cancel(event="ui/stop", match="data.n"),
)
async def stoppable(ctx: Context) -> str:
    await ctx.step.sleep("long-wait", "1h")
    return "done"


@client.function(
    "debounced",
    name="Debounced",
    event="ui/debounce",
    debounce=Debounce(period="1s", key="event.data.k"),
)
async def debounced(ctx: Context) -> Any:
    return ctx.event.data


@client.function(
    "batched", name="Batched", event="ui/batch", batch_events=Batch(max_size=2, timeout="60s")
)
async def batched(ctx: Context) -> int:
    return len(ctx.events)


@client.function("printer", name="Printer", event="ui/print", scopes=[Scope(2, name="ui-printer")])
async def printer(ctx: Context) -> str:
    return "printed"


@client.function("queue-lane", name="In line", event="ui/lane", lane="event.data.who")
async def in_line(ctx: Context) -> str:
    await ctx.step.sleep("hold-the-lane", "1h")  # the lane stays held; later runs wait in line
    return "done"


@client.function(
    "metered",
    name="Metered",
    event="ui/metered",
    rolling_window=[RollingWindow(5, "1s", rate_name="ui-stripe")],
)
async def metered(ctx: Context) -> str:
    return "charged"


app = FastAPI()
serve(app, client)
