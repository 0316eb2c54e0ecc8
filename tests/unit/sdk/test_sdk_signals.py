"""weir.sdk's signals on the wire: wait_for_signal sends Inngest's WaitForSignal op (opts
signal, timeout, conflict; Weir's `if`), reads Inngest's memo back as a `Signal` (None at the
timeout), and step.reply reports a StepRun whose opts.reply names the delivery; the same for
plain (sync) handlers and in checkpointed requests."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from weir.sdk import Context, Signal, StepError, Weir, serve
from weir.sdk._steps.ops import hash_step_id

from tests.unit.sdk.sdk_proto_app import client_for

WAIT, REPLY = hash_step_id("approval", None), hash_step_id("answer", None)
RECEIVED = {"data": {"signal": "order/1", "data": {"ok": True}, "delivery_id": "D1"}}


def _build(weir: Weir) -> None:
    @weir.function("approve", event="s/approve", retries=0)
    async def approve(ctx: Context) -> Any:
        try:
            got = await ctx.step.wait_for_signal(
                "approval", signal="order/1", timeout="1h", if_exp="async.data.ok"
            )
        except StepError as err:
            return {"error": err.name}
        if got is None:
            return "timed out"
        answer = await ctx.step.reply("answer", got, {"thanks": got.data})
        return {"signal": got.signal, "answer": answer}

    @weir.function("approve-sync", event="s/sync", retries=0)
    def approve_sync(ctx: Any) -> Any:
        got = ctx.step.wait_for_signal("approval", signal="order/1", timeout="30s")
        if got is None:
            return "timed out"
        return ctx.step.reply("answer", got, got.data)

    @weir.function("approve-cp", event="s/cp", retries=0, checkpoint=True)
    async def approve_cp(ctx: Context) -> Any:
        got = await ctx.step.wait_for_signal("approval", signal="order/1", timeout="1h")
        assert got is not None
        await ctx.step.reply("answer", got, 1)
        return await ctx.step.run("after", lambda: 2)


@pytest.fixture
def app() -> FastAPI:
    weir = Weir("sg", dev=True)
    _build(weir)
    served = FastAPI()
    serve(served, weir)
    return served


async def _call(app: FastAPI, fn: str, steps: dict[str, Any] | None = None) -> httpx.Response:
    body = {
        "ctx": {
            "attempt": 0,
            "disable_immediate_execution": False,
            "run_id": "01RUN",
            "max_attempts": 1,
            "stack": {"current": 0, "stack": list(steps or {})},
        },
        "event": {"data": {}, "id": "01EV", "name": "s/x", "ts": 1},
        "events": [{"data": {}, "id": "01EV", "name": "s/x", "ts": 1}],
        "steps": steps or {},
        "use_api": False,
        "version": 2,
    }
    async with client_for(app) as client:
        return await client.post(
            f"/api/inngest?fnId=sg-{fn}&stepId=step",
            content=json.dumps(body),
            headers={"content-type": "application/json"},
        )


@pytest.mark.parametrize("fn", ["approve", "approve-sync"])
async def test_the_wait_is_inngests_op_and_the_reply_names_the_delivery(
    app: FastAPI, fn: str
) -> None:
    [wait] = (await _call(app, fn)).json()
    assert wait["op"] == "WaitForSignal" and wait["id"] == WAIT
    assert wait["opts"]["signal"] == "order/1" and wait["opts"]["conflict"] == "fail"
    assert wait["name"] == wait["displayName"] == "approval"
    [reply] = (await _call(app, fn, {WAIT: RECEIVED})).json()
    assert (reply["op"], reply["id"], reply["opts"]) == ("StepRun", REPLY, {"reply": "D1"})
    done = await _call(app, fn, {WAIT: RECEIVED, REPLY: {"data": reply["data"]}})
    assert done.status_code == 200
    assert reply["data"] == ({"thanks": {"ok": True}} if fn == "approve" else {"ok": True})


async def test_the_if_travels_and_a_timeout_or_a_conflict_reach_the_code(app: FastAPI) -> None:
    [wait] = (await _call(app, "approve")).json()
    assert wait["opts"]["if"] == "async.data.ok"
    assert (await _call(app, "approve", {WAIT: None})).json() == "timed out"
    conflict = {"error": {"name": "SignalConflictError", "message": "held by run R"}}
    assert (await _call(app, "approve", {WAIT: conflict})).json() == {
        "error": "SignalConflictError"
    }


async def test_a_checkpointed_reply_keeps_its_opts(app: FastAPI) -> None:
    ops = (await _call(app, "approve-cp", {WAIT: RECEIVED})).json()
    assert [(o["op"], o.get("opts")) for o in ops[:1]] == [("StepRun", {"reply": "D1"})]


def test_reply_needs_a_signal_with_a_delivery() -> None:
    from weir.sdk._steps.steps import reply_opts

    assert reply_opts(Signal("s", 1, "D")) == {"reply": "D"}
    with pytest.raises(ValueError, match="reply needs the Signal"):
        reply_opts(Signal("s", 1))
