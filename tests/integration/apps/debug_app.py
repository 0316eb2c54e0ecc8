"""Functions that fail the way a developer's code does, to read the logs they leave."""

import os

from fastapi import FastAPI
from weir.sdk import Context, Weir, serve

weir = Weir(os.environ.get("APP_ID", "debugapp"))


def charge_card(order_id: str) -> str:
    raise ValueError(f"card declined for {order_id}")


@weir.function("charge", event="dbg/charge", retries=1)
async def charge(ctx: Context) -> str:
    return await ctx.step.run("charge", charge_card, ctx.event.data["order_id"])


@weir.function("quick", event=f"{weir.app_id}/quick", retries=0)  # one app each
async def quick(ctx: Context) -> str:
    return "done"


app = FastAPI()
serve(app, weir)
