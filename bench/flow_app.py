"""No-op functions behind flow-control limits, for bench_flow.py (served by uvicorn)."""

import os

from fastapi import FastAPI
from weir.sdk import Concurrency, Context, RateLimit, Throttle, Weir, serve

weir = Weir(os.environ.get("APP_ID", "flowbench"))


async def nothing(ctx: Context) -> None:
    return None


weir.function("free", event="b/free")(nothing)
weir.function("keyed", event="b/keyed", concurrency=Concurrency(1, key="event.data.k"))(nothing)
weir.function("throttled", event="b/throttle", throttle=Throttle(100, "1s", burst=0))(nothing)
weir.function("limited", event="b/limit", rate_limit=RateLimit(100, "1s"))(nothing)

app = FastAPI()
serve(app, weir)
