"""The example app imports, serves its functions and runs its first step."""

from __future__ import annotations

import httpx
from weir.sdk._steps.ops import hash_step_id
from weir.sdk.examples.demo import app


async def test_demo_serves_and_runs_a_step() -> None:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8000") as client:
        info = await client.get("/api/inngest")
        event = {"name": "demo/order.placed", "data": {"order_id": "o1", "amount": 10}}
        body = {
            "event": event,
            "events": [event],
            "steps": {},
            "use_api": False,
            "ctx": {"run_id": "r", "attempt": 0, "disable_immediate_execution": False, "stack": {}},
        }
        ran = await client.post("/api/inngest?fnId=demo-process-order&stepId=step", json=body)
    assert info.json()["function_count"] == 3
    [op] = ran.json()
    assert (op["op"], op["id"], op["data"]) == ("StepRun", hash_step_id("price", None), 12.0)
