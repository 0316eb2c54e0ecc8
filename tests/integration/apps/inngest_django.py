"""Official-SDK functions served by `inngest.django` (async functions, Django's ASGI app)."""

import datetime
import os
from typing import Any

import django
import inngest
import inngest.django
from django.conf import settings

client = inngest.Inngest(app_id=os.environ.get("APP_ID", "djangoapp"))


def trigger(name: str) -> inngest.TriggerEvent:
    return inngest.TriggerEvent(event=name)


@client.create_function(fn_id="steps", trigger=trigger("t/steps"))
async def steps(ctx: inngest.Context) -> dict[str, Any]:
    a = await ctx.step.run("a", lambda: ctx.event.data["x"] + 1)
    b = await ctx.step.run("b", lambda: a * 10)
    return {"a": a, "b": b}


@client.create_function(fn_id="sleeper", trigger=trigger("t/sleep"))
async def sleeper(ctx: inngest.Context) -> str:
    await ctx.step.sleep("nap", datetime.timedelta(seconds=1))
    return "woke"


@client.create_function(fn_id="waiter", trigger=trigger("t/wait"))
async def waiter(ctx: inngest.Context) -> Any:
    ev = await ctx.step.wait_for_event(
        "w",
        event="t/go",
        if_exp="async.data.k == event.data.k",
        timeout=datetime.timedelta(seconds=10),
    )
    return None if ev is None else ev.data


@client.create_function(fn_id="flaky", trigger=trigger("t/flaky"), retries=2)
async def flaky(ctx: inngest.Context) -> int:
    if ctx.attempt < 1:
        raise RuntimeError("first attempt fails")
    return ctx.attempt


@client.create_function(fn_id="nonretry", trigger=trigger("t/nonretry"), retries=2)
async def nonretry(ctx: inngest.Context) -> None:
    raise inngest.NonRetriableError("give up at once")


@client.create_function(fn_id="dawdler", trigger=trigger("t/dawdle"))
async def dawdler(ctx: inngest.Context) -> str:
    await ctx.step.sleep("long", datetime.timedelta(seconds=60))
    return "late"


@client.create_function(fn_id="impatient", trigger=trigger("t/impatient"), retries=0)
async def impatient(ctx: inngest.Context) -> object:
    return await ctx.step.invoke("ask", function=dawdler, timeout=datetime.timedelta(seconds=1))


FUNCTIONS = [steps, sleeper, waiter, flaky, nonretry, dawdler, impatient]
settings.configure(
    DEBUG=False,
    SECRET_KEY="weir-integration-test",
    ROOT_URLCONF=__name__,
    ALLOWED_HOSTS=["*"],
    INSTALLED_APPS=[],
    MIDDLEWARE=[],
)
django.setup()
urlpatterns = [inngest.django.serve(client, FUNCTIONS)]

from django.core.asgi import get_asgi_application  # noqa: E402 — needs the settings above

app = get_asgi_application()
