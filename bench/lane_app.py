"""No-op functions with and without a FIFO lane, for bench_lanes.py (served by uvicorn)."""

import os

from fastapi import FastAPI
from weir.sdk import Context, Weir, serve

weir = Weir(os.environ.get("APP_ID", "lanebench"))


async def nothing(ctx: Context) -> None:
    return None


weir.function("free", event="b/free")(nothing)
weir.function("laned", event="b/laned", lane="event.data.k")(nothing)

app = FastAPI()
serve(app, weir)
