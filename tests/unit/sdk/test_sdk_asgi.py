"""The stand-alone ASGI app serves the same protocol."""

from __future__ import annotations

import httpx
from weir.sdk import Context, Weir, asgi_app


async def test_asgi_app_answers_get_and_post() -> None:
    weir = Weir("plain", dev=True)

    @weir.function("hello", event="app/hello")
    async def hello(ctx: Context) -> str:
        return await ctx.step.run("greet", lambda: f"hi {ctx.event.data['who']}")

    app = asgi_app(weir)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://apps:8000"
    ) as client:
        info = await client.get("/anything")
        event = {"name": "app/hello", "data": {"who": "ann"}}
        body = {
            "event": event,
            "events": [event],
            "steps": {},
            "use_api": False,
            "ctx": {"run_id": "r", "attempt": 0, "disable_immediate_execution": False, "stack": {}},
        }
        ran = await client.post("/anything?fnId=plain-hello&stepId=step", json=body)
    assert info.json()["function_count"] == 1
    assert info.headers["x-inngest-framework"] == "asgi"
    [op] = ran.json()
    assert (ran.status_code, op["op"], op["data"]) == (206, "StepRun", "hi ann")
