"""The official SDK's plain (non-async) functions the framework tests serve: steps, a sleep, a
wait for an event, a retry, a NonRetriableError and an invoke that times out. Flask, Tornado
and DigitalOcean apps each serve this one list."""

import datetime
import os
from typing import Any

import inngest

client = inngest.Inngest(app_id=os.environ.get("APP_ID", "syncapp"))


def trigger(name: str) -> inngest.TriggerEvent:
    return inngest.TriggerEvent(event=name)


@client.create_function(fn_id="steps", trigger=trigger("t/steps"))
def steps(ctx: inngest.ContextSync) -> dict[str, Any]:
    a = ctx.step.run("a", lambda: ctx.event.data["x"] + 1)
    b = ctx.step.run("b", lambda: a * 10)
    return {"a": a, "b": b}


@client.create_function(fn_id="sleeper", trigger=trigger("t/sleep"))
def sleeper(ctx: inngest.ContextSync) -> str:
    ctx.step.sleep("nap", datetime.timedelta(seconds=1))
    return "woke"


@client.create_function(fn_id="waiter", trigger=trigger("t/wait"))
def waiter(ctx: inngest.ContextSync) -> Any:
    ev = ctx.step.wait_for_event(
        "w",
        event="t/go",
        if_exp="async.data.k == event.data.k",
        timeout=datetime.timedelta(seconds=10),
    )
    return None if ev is None else ev.data


@client.create_function(fn_id="flaky", trigger=trigger("t/flaky"), retries=2)
def flaky(ctx: inngest.ContextSync) -> int:
    if ctx.attempt < 1:
        raise RuntimeError("first attempt fails")
    return ctx.attempt


@client.create_function(fn_id="nonretry", trigger=trigger("t/nonretry"), retries=2)
def nonretry(ctx: inngest.ContextSync) -> None:
    raise inngest.NonRetriableError("give up at once")


@client.create_function(fn_id="dawdler", trigger=trigger("t/dawdle"))
def dawdler(ctx: inngest.ContextSync) -> str:
    ctx.step.sleep("long", datetime.timedelta(seconds=60))
    return "late"


@client.create_function(fn_id="impatient", trigger=trigger("t/impatient"), retries=0)
def impatient(ctx: inngest.ContextSync) -> object:
    # the invoke times out: the SDK re-raises Weir's error, which has no stack ("stack": null)
    return ctx.step.invoke("ask", function=dawdler, timeout=datetime.timedelta(seconds=1))


FUNCTIONS = [steps, sleeper, waiter, flaky, nonretry, dawdler, impatient]
