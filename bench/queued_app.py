"""Functions for bench_queued.py (served by uvicorn): a no-op, and one whose runs all wait for
a throttle slot a day apart, so that a backlog of queued runs can be made without calls."""

import os

from fastapi import FastAPI
from weir.sdk import Context, Throttle, Weir, serve

weir = Weir(os.environ.get("APP_ID", "queuedbench"))


async def nothing(ctx: Context) -> None:
    return None


weir.function("free", event="b/free")(nothing)
weir.function("parked", event="b/parked", throttle=Throttle(1, "24h", burst=0))(nothing)

app = FastAPI()
serve(app, weir)
