"""A small app showing weir.sdk: steps, a sleep, a wait with a timeout, parallel steps,
a retrying step and a cron.

    uvicorn weir.sdk.examples.demo:app --port 8000

then sync it with Weir (it registers http://127.0.0.1:8000/api/inngest) and send events:
`demo/order.placed` with `{"order_id": "o1", "amount": 30}`, then `demo/order.paid` with the
same `order_id` within a minute.
"""

from __future__ import annotations

import random
from typing import Any

from fastapi import FastAPI
from weir.sdk import Concurrency, Context, ContextSync, Event, Weir, serve

weir = Weir("demo")


@weir.function(
    "process-order",
    name="Process order",
    event="demo/order.placed",
    retries=3,
    concurrency=Concurrency(5, key="event.data.order_id"),
)
async def process_order(ctx: Context) -> dict[str, Any]:
    order = ctx.event.data
    total = await ctx.step.run("price", lambda: order.get("amount", 0) * 1.2)
    await ctx.step.sleep("cool-off", "10s")
    paid = await ctx.step.wait_for_event(
        "await-payment",
        event="demo/order.paid",
        timeout="1m",
        if_exp="async.data.order_id == event.data.order_id",
    )
    if paid is None:
        return {"order": order.get("order_id"), "status": "expired"}
    receipt, stock = await ctx.step.parallel(
        [
            lambda: ctx.step.run("send-receipt", lambda: f"receipt for {total:.2f}"),
            lambda: ctx.step.run("reserve-stock", lambda: {"reserved": True}),
        ]
    )
    await ctx.step.send_event("announce", Event(name="demo/order.done", data=dict(order)))
    return {"order": order.get("order_id"), "total": total, "receipt": receipt, "stock": stock}


def _flaky_call(attempt: int) -> str:
    # Fails about half the time, so the step is retried (each retry is a new attempt).
    if random.random() < 0.5:
        raise ConnectionError(f"upstream unavailable (attempt {attempt})")
    return "ok"


@weir.function("flaky-sync", event="demo/flaky", retries=4)
async def flaky_sync(ctx: Context) -> str:
    return await ctx.step.run("call-upstream", _flaky_call, ctx.attempt)


@weir.function("nightly-report", cron="TZ=Europe/Paris 0 3 * * *")
def nightly_report(ctx: ContextSync) -> dict[str, int]:
    count = ctx.step.run("count-orders", lambda: 42)
    return {"orders": count}


app = FastAPI(title="weir demo")
serve(app, weir)
