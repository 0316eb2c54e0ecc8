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


def load_order(order_id: str) -> dict[str, str]:
    return {"id": order_id}


@weir.function("process-order", event="dbg/order.placed", retries=0)
async def process_order(ctx: Context) -> dict[str, str]:
    """docs/sdk.md's first example (without its sleep), served by a plain `uvicorn` app."""
    order = await ctx.step.run("load", load_order, ctx.event.data["order_id"])
    ctx.logger.info("loaded order %s", order["id"])  # once, not on every replay
    await ctx.step.run("pack", lambda: "packed")
    return {"order": order["id"]}


app = FastAPI()
serve(app, weir)
