"""Functions for the certification run: every kind of load at once, under kills.

Each call of a function and each step body (begin and end) is journaled, fsync'd, with its run,
function, step, attempt and key: the audits read the app's own record, not Weir's.
"""

import asyncio
import os

from fastapi import FastAPI
from weir.sdk import Concurrency, Context, RateLimit, Throttle, Weir, serve

from tests.integration.apps.journal import note

weir = Weir(os.environ.get("APP_ID", "certify"))
STEP_S = 0.05  # short beside a restart, so no step body outlives the process that called it
CONCURRENCY = 2
THROTTLE = (2, 1, 1)  # limit, period s, burst: 2 at once from idle, then one per 500 ms
RATE_LIMIT = (4, 1)  # limit, period s
FAILING_ATTEMPTS = 2  # `flaky` fails its step on attempts 0 and 1


def called(ctx: Context, fn: str) -> None:
    note("call", durable=True, run=ctx.run_id, fn=fn, attempt=ctx.attempt, key=_key(ctx))


def _key(ctx: Context) -> str:
    return str(ctx.event.data.get("k", ""))


async def work(ctx: Context, fn: str, step: str) -> str:
    fields = {"run": ctx.run_id, "fn": fn, "step": step, "attempt": ctx.attempt, "key": _key(ctx)}
    note("begin", durable=True, **fields)
    await asyncio.sleep(STEP_S)
    if fn == "flaky" and ctx.attempt < FAILING_ATTEMPTS:
        note("fail", durable=True, **fields)
        raise RuntimeError(f"injected failure on attempt {ctx.attempt}")
    note("end", durable=True, **fields)
    return step


@weir.function("keyed", event="c/keyed", concurrency=Concurrency(CONCURRENCY, key="event.data.k"))
async def keyed(ctx: Context) -> list[str]:
    called(ctx, "keyed")
    steps = [lambda i=i: ctx.step.run(f"p{i}", work, ctx, "keyed", f"p{i}") for i in range(3)]
    both = await ctx.step.parallel(steps)
    return [*both, await ctx.step.run("s", work, ctx, "keyed", "s")]


@weir.function(
    "throttled",
    event="c/throttled",
    throttle=Throttle(THROTTLE[0], f"{THROTTLE[1]}s", burst=THROTTLE[2], key="event.data.k"),
)
async def throttled(ctx: Context) -> str:
    called(ctx, "throttled")
    return await ctx.step.run("t", work, ctx, "throttled", "t")


@weir.function(
    "limited",
    event="c/limited",
    rate_limit=RateLimit(RATE_LIMIT[0], f"{RATE_LIMIT[1]}s", key="event.data.k"),
)
async def limited(ctx: Context) -> str:
    called(ctx, "limited")
    return await ctx.step.run("r", work, ctx, "limited", "r")


@weir.function("sleeper", event="c/sleeper")
async def sleeper(ctx: Context) -> list[str]:
    called(ctx, "sleeper")
    a = await ctx.step.run("a", work, ctx, "sleeper", "a")
    await ctx.step.sleep("nap", "1s")
    return [a, await ctx.step.run("b", work, ctx, "sleeper", "b")]


@weir.function("waiter", event="c/waiter")
async def waiter(ctx: Context) -> list[str]:
    called(ctx, "waiter")
    a = await ctx.step.run("a", work, ctx, "waiter", "a")
    got = await ctx.step.wait_for_event(
        "go", event="c/go", if_exp="async.data.w == event.data.w", timeout="2s"
    )
    b = await ctx.step.run("b", work, ctx, "waiter", "b")
    return [a, "woken" if got else "timed out", b]


@weir.function("flaky", event="c/flaky", retries=3)
async def flaky(ctx: Context) -> str:
    called(ctx, "flaky")
    return await ctx.step.run("f", work, ctx, "flaky", "f")


@weir.function("probe", event="c/probe")
async def probe(ctx: Context) -> str:
    return "here"


app = FastAPI()
serve(app, weir)
