"""A batch with a long window, for the retention tests (its timeout from WEIR_TEST_BATCH)."""

import os
from typing import Any

from fastapi import FastAPI
from weir.sdk import Batch, Context, Weir, serve

weir = Weir(os.environ.get("APP_ID", "weirretention"))


@weir.function(
    "held", event="t/held", batch_events=Batch(3, os.environ.get("WEIR_TEST_BATCH", "1h"))
)
async def held(ctx: Context) -> list[Any]:
    return [e.data["n"] for e in ctx.events]


app = FastAPI()
serve(app, weir)
