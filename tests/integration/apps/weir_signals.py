"""Functions that wait for signals (issue 39 items 1 and 2). `approve` waits on the signal its
event names (with the event's timeout and `if`), optionally sleeps (a window for a restart
between the delivery and the answer), replies to the sender, and returns what it received;
`greedy` waits on a signal too, catching the conflict error a second waiter gets."""

import os
from typing import Any

from fastapi import FastAPI
from weir.sdk import Context, StepError, Weir, serve

from tests.integration.apps.journal import note

weir = Weir(os.environ.get("APP_ID", "signals"))


@weir.function("approve", event="t/approve", retries=0)
async def approve(ctx: Context) -> dict[str, Any]:
    asked = ctx.event.data
    try:
        got = await ctx.step.wait_for_signal(
            "approval",
            signal=asked["signal"],
            timeout=asked.get("timeout", "1h"),
            if_exp=asked.get("if"),
            on_conflict=asked.get("conflict", "fail"),
        )
    except StepError as err:
        return {"conflict": err.name, "message": str(err)}
    if got is None:
        return {"timed_out": True}
    note("received", run=ctx.run_id, signal=got.signal, durable=True)
    if asked.get("pause"):
        await ctx.step.sleep("pause", asked["pause"])
    answer = await ctx.step.reply("answer", got, {"approved": True, "by": got.data})
    return {"signal": got.signal, "data": got.data, "answer": answer}


app = FastAPI()
serve(app, weir)
