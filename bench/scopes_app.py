"""No-op functions for bench_scopes.py: unlimited, and behind one concurrency scope of limit 1
(a static name, and a CEL key), served by uvicorn."""

import os

from fastapi import FastAPI
from weir.sdk import Context, Scope, Weir, serve

weir = Weir(os.environ.get("APP_ID", "scopebench"))


async def nothing(ctx: Context) -> None:
    return None


weir.function("free", event="b/free")(nothing)
weir.function("named", event="b/named", scopes=[Scope(1, name="hot")])(nothing)
weir.function("keyed", event="b/keyed", scopes=[Scope(1, key="event.data.k")])(nothing)
weir.function("two", event="b/two", scopes=[Scope(1, name="hot2"), Scope(5, key="event.data.k")])(
    nothing
)

app = FastAPI()
serve(app, weir)
