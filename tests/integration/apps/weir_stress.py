"""A function that strains every limit at once: two concurrency limits, a keyed rate limit,
parallel steps and injected failures (some calls fail, some step attempts error)."""

import asyncio
import hashlib
import os

from fastapi import FastAPI
from fastapi.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send
from weir.sdk import Concurrency, Context, RateLimit, Weir, serve

weir = Weir(os.environ.get("APP_ID", "stress"))


def unlucky(*parts: object) -> bool:
    """Deterministic 'random' failure: about one in eight."""
    return hashlib.sha256(repr(parts).encode()).digest()[0] < 32


@weir.function(
    "stress",
    event="t/stress",
    retries=8,  # with 1-in-8 failures twice per attempt, exhausting 9 attempts is ~1e-6
    concurrency=[Concurrency(3, key="event.data.k"), Concurrency(5)],
    rate_limit=RateLimit(8, "1s", key="event.data.k"),
)
async def stress(ctx: Context) -> int:
    async def part(i: int) -> int:
        await asyncio.sleep(0.03)
        if unlucky(ctx.run_id, i, ctx.attempt):
            raise RuntimeError(f"injected step failure {i}")
        return i

    both = await ctx.step.parallel(
        [lambda: ctx.step.run("p0", part, 0), lambda: ctx.step.run("p1", part, 1)]
    )
    return sum(both)


class FlakyTransport:
    """Some requests fail before the SDK sees them (a 500 without SDK headers)."""

    def __init__(self, inner: ASGIApp) -> None:
        self.inner = inner
        self.count = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            self.count += 1
            if unlucky("transport", self.count):
                await JSONResponse({"error": "injected"}, 500)(scope, receive, send)
                return
        await self.inner(scope, receive, send)


inner = FastAPI()
serve(inner, weir)
app = FlakyTransport(inner)
