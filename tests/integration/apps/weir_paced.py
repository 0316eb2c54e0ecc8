"""One throttled function that notes when each run starts (Weir's SDK): the restart test
counts starts per window from this app's own journal."""

import os

from fastapi import FastAPI
from weir.sdk import Context, Throttle, Weir, serve

from tests.integration.apps.journal import note

weir = Weir(os.environ.get("APP_ID", "paced"))


@weir.function("paced", event="t/paced", throttle=Throttle(5, "1s", burst=0))
async def paced(ctx: Context) -> int:
    note("start", n=ctx.event.data["n"], run=ctx.run_id)
    return int(ctx.event.data["n"])


app = FastAPI()
serve(app, weir)
