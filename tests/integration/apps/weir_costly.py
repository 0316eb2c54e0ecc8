"""A function behind a costly trigger `if`, and a plain one, for the ingest latency probe."""

import os

from fastapi import FastAPI
from weir.sdk import Context, Weir, serve

weir = Weir(os.environ.get("APP_ID", "weircostly"))
COSTLY_IF = 'event.data.items.map(i, i + "-" + i).size() == 0'  # never holds


@weir.function("costly", event="t/costly", expression=COSTLY_IF)
async def costly(ctx: Context) -> str:
    return "never"


@weir.function("plain", event="t/plain")
async def plain(ctx: Context) -> str:
    return "ok"


app = FastAPI()
serve(app, weir)
