"""Rolling windows through Weir's SDK; each run notes its start in the app's own journal.

Served twice under two APP_IDs: `metered` names the same meter in both apps, so both draw on
one budget; `keyed` and `flaky` are each app's own."""

import os

from fastapi import FastAPI
from weir.sdk import Context, RollingWindow, Weir, serve

from tests.integration.apps.journal import note

weir = Weir(os.environ.get("APP_ID", "windowed"))


@weir.function("keyed", event="t/win", rolling_window=RollingWindow(4, "1s", key="event.data.k"))
async def keyed(ctx: Context) -> None:
    note("keyed", n=ctx.event.data["n"], k=ctx.event.data["k"], run=ctx.run_id)


@weir.function(
    "metered", event="t/meter", rolling_window=RollingWindow(3, 1_000, rate_name="it-stripe")
)
async def metered(ctx: Context) -> None:
    note("metered", n=ctx.event.data["n"], run=ctx.run_id)


@weir.function("flaky", event="t/flaky", retries=1, rolling_window=RollingWindow(1, "2s"))
async def flaky(ctx: Context) -> str:
    note("flaky", attempt=ctx.attempt, run=ctx.run_id)
    if ctx.attempt == 0:
        raise RuntimeError("the first attempt fails")
    return "ok"


app = FastAPI()
serve(app, weir)
