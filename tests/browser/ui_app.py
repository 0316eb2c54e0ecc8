"""The app the browser tests drive: one function per thing the UI must show."""

from typing import Any

from fastapi import FastAPI
from weir.sdk import Context, RateLimit, Scope, Throttle, Weir, serve

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


@client.function("printer", name="Printer", event="ui/print", scopes=[Scope(2, name="ui-printer")])
async def printer(ctx: Context) -> str:
    return "printed"


app = FastAPI()
serve(app, client)
