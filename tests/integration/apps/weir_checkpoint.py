"""Checkpointed functions (weir.sdk): each step body notes itself in the journal, so tests
can count executions, and each function ends in a different way after its steps."""

import asyncio
import json
import os
from datetime import timedelta
from typing import Any

from fastapi import FastAPI
from weir.sdk import Checkpoint, Context, RetryAfterError, Weir, serve

from tests.integration.apps.journal import note

weir = Weir(os.environ.get("APP_ID", "checkpoint"))


def _step(ctx: Context, name: str, value: Any) -> Any:
    note("step", run=ctx.run_id, name=name, attempt=ctx.attempt)
    return value


def _ran_before(run_id: str, name: str) -> bool:
    """Whether the journal shows this step of this run ran already (in any app process)."""
    path = os.environ.get("WEIR_TEST_JOURNAL", "")
    if not path or not os.path.exists(path):
        return False
    with open(path, encoding="utf-8") as f:
        entries = [json.loads(line) for line in f]
    return any(e.get("run") == run_id and e.get("name") == name for e in entries)


@weir.function("ten", event="cp/ten", checkpoint=True)
async def ten(ctx: Context) -> int:
    total = 0
    for i in range(10):
        total += await ctx.step.run(f"s{i}", lambda i=i: _step(ctx, f"s{i}", i))
    return total


@weir.function("budget", event="cp/budget", checkpoint=Checkpoint(max_steps=3))
async def budget(ctx: Context) -> list[int]:
    return [await ctx.step.run(f"b{i}", lambda i=i: _step(ctx, f"b{i}", i)) for i in range(7)]


@weir.function("flaky-step", event="cp/flaky", checkpoint=True, retries=2)
async def flaky_step(ctx: Context) -> str:
    await ctx.step.run("before", lambda: _step(ctx, "before", 1))

    def flaky() -> str:
        _step(ctx, "flaky", None)
        if ctx.attempt == 0:
            raise ValueError("first attempt fails")
        return "ok"

    return await ctx.step.run("flaky", flaky)


@weir.function("raise-after", event="cp/raise", checkpoint=True, retries=2)
async def raise_after(ctx: Context) -> str:
    await ctx.step.run("kept", lambda: _step(ctx, "kept", "k"))
    if ctx.attempt == 0:
        raise RetryAfterError("not yet", retry_after=timedelta(seconds=1))
    return f"done on attempt {ctx.attempt}"


@weir.function("sleepy", event="cp/sleep", checkpoint=True)
async def sleepy(ctx: Context) -> list[str]:
    a = await ctx.step.run("a", lambda: _step(ctx, "a", "a"))
    await ctx.step.sleep("nap", "1s")
    b = await ctx.step.run("b", lambda: _step(ctx, "b", "b"))
    return [a, b]


@weir.function("killable", event="cp/kill", checkpoint=True, retries=20)
async def killable(ctx: Context) -> str:
    await ctx.step.run("a", lambda: _step(ctx, "a", 1))
    await ctx.step.run("b", lambda: _step(ctx, "b", 2))

    async def slow() -> str:
        first = not _ran_before(ctx.run_id, "slow")
        _step(ctx, "slow", None)
        if first:
            await asyncio.sleep(120)  # the test kills the app here
        return "slow"

    return await ctx.step.run("slow", slow)


app = FastAPI()
serve(app, weir)
