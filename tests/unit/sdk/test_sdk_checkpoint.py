"""Checkpointed functions: one request runs consecutive steps and reports them together,
ending with what stopped it (the next step Weir performs, RunComplete, RunError, a budget)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from weir.sdk import Checkpoint, Context, NonRetriableError, StepError, Weir, serve
from weir.sdk._steps.ops import hash_step_id

from tests.unit.sdk.sdk_proto_app import client_for

RAN: list[str] = []  # step bodies in the order they ran, across requests of one test


def _build(weir: Weir) -> None:
    @weir.function("three", event="c/three", checkpoint=True)
    async def three(ctx: Context) -> Any:
        a = await ctx.step.run("a", lambda: _ran("a", (1, 2)))
        b = await ctx.step.run("b", lambda: _ran("b", {"seen": a}))
        c = await ctx.step.run("c", lambda: _ran("c", 3))
        return {"a": a, "b": b, "c": c}

    @weir.function("budget", event="c/budget", checkpoint=Checkpoint(max_steps=2))
    async def budget(ctx: Context) -> Any:
        return [await ctx.step.run(f"s{i}", lambda i=i: _ran(f"s{i}", i)) for i in range(5)]

    @weir.function("then-sleep", event="c/sleep", checkpoint=True)
    async def then_sleep(ctx: Context) -> str:
        await ctx.step.run("before", lambda: _ran("before", "x"))
        await ctx.step.sleep("nap", "10s")
        return await ctx.step.run("after", lambda: _ran("after", "y"))

    @weir.function("then-fail", event="c/fail", checkpoint=True, retries=3)
    async def then_fail(ctx: Context) -> None:
        await ctx.step.run("ok", lambda: _ran("ok", 1))
        await ctx.step.run("bad", _bad)

    @weir.function("then-raise", event="c/raise", checkpoint=True)
    async def then_raise(ctx: Context) -> None:
        await ctx.step.run("ok", lambda: _ran("ok", 1))
        raise NonRetriableError("stop here")

    @weir.function("then-parallel", event="c/parallel", checkpoint=True)
    async def then_parallel(ctx: Context) -> Any:
        await ctx.step.run("first", lambda: _ran("first", 0))
        return await ctx.step.parallel(
            [lambda: ctx.step.run("p1", lambda: 1), lambda: ctx.step.run("p2", lambda: 2)]
        )

    @weir.function("caught", event="c/caught", checkpoint=True, retries=0)
    async def caught(ctx: Context) -> str:
        await ctx.step.run("ok", lambda: _ran("ok", 1))
        try:
            await ctx.step.run("bad", _bad)
        except StepError as err:
            return f"caught {err}"
        return "not reached"

    @weir.function("sync-three", event="c/sync", checkpoint=True)
    def sync_three(ctx: Any) -> Any:
        return [ctx.step.run(n, lambda n=n: _ran(n, n.upper())) for n in ("x", "y", "z")]

    @weir.function("keeps", event="c/keeps", checkpoint=True)
    async def keeps(ctx: Context) -> Any:
        kept: dict[str, Any] = {"n": 1}
        a = await ctx.step.run("a", lambda: kept)
        a["seen"] = True  # the caller's copy: the saved result stays as returned
        await ctx.step.run("b", lambda: kept.update(n=2))  # the step's own object changes later
        return a

    @weir.function("plain", event="c/plain")
    async def plain(ctx: Context) -> Any:
        a = await ctx.step.run("a", lambda: _ran("a", 1))
        return await ctx.step.run("b", lambda: _ran("b", a + 1))


def _ran(name: str, value: Any) -> Any:
    RAN.append(name)
    return value


def _bad() -> None:
    RAN.append("bad")
    raise ValueError("broken")


@pytest.fixture
def app() -> FastAPI:
    RAN.clear()
    weir = Weir("cp", dev=True)
    _build(weir)
    served = FastAPI()
    serve(served, weir)
    return served


async def _call(
    app: FastAPI, fn: str, steps: dict[str, Any] | None = None, **ctx: Any
) -> httpx.Response:
    body = {
        "ctx": {
            "attempt": 0,
            "disable_immediate_execution": False,
            "run_id": "01RUN",
            "max_attempts": 4,
            "stack": {"current": 0, "stack": []},
            **ctx,
        },
        "event": {"data": {}, "id": "01EV", "name": "c/x", "ts": 1},
        "events": [{"data": {}, "id": "01EV", "name": "c/x", "ts": 1}],
        "steps": steps or {},
        "use_api": False,
        "version": 2,
    }
    async with client_for(app) as client:
        return await client.post(
            f"/api/inngest?fnId=cp-{fn}&stepId=step",
            content=json.dumps(body),
            headers={"content-type": "application/json"},
        )


def _memos(ops: list[dict[str, Any]]) -> dict[str, Any]:
    return {o["id"]: {"data": o["data"]} for o in ops if o["op"] == "StepRun"}


async def test_steps_run_on_and_the_run_completes_in_one_answer(app: FastAPI) -> None:
    response = await _call(app, "three")
    assert response.status_code == 206
    ops = response.json()
    assert [o["op"] for o in ops] == ["StepRun", "StepRun", "StepRun", "RunComplete"]
    assert [o["displayName"] for o in ops[:3]] == ["a", "b", "c"]
    assert ops[0]["id"] == hash_step_id("a", None)
    # later code sees each result as a replay would: JSON read back (a tuple is a list)
    assert ops[1]["data"] == {"seen": [1, 2]}
    assert ops[3]["data"] == {"a": [1, 2], "b": {"seen": [1, 2]}, "c": 3}
    assert RAN == ["a", "b", "c"]


async def test_a_replay_of_the_saved_steps_completes_without_running_them(app: FastAPI) -> None:
    first = (await _call(app, "three")).json()
    RAN.clear()
    response = await _call(app, "three", _memos(first))
    assert response.status_code == 200
    assert response.json() == {"a": [1, 2], "b": {"seen": [1, 2]}, "c": 3}
    assert RAN == []


async def test_the_step_budget_ends_the_request_before_the_next_step(app: FastAPI) -> None:
    first = (await _call(app, "budget")).json()
    assert [o["displayName"] for o in first] == ["s0", "s1"]
    assert RAN == ["s0", "s1"]
    second = (await _call(app, "budget", _memos(first))).json()
    assert [o["displayName"] for o in second] == ["s2", "s3"]
    third = (await _call(app, "budget", _memos(first) | _memos(second))).json()
    assert [o["op"] for o in third] == ["StepRun", "RunComplete"]
    assert third[-1]["data"] == [0, 1, 2, 3, 4]
    assert RAN == ["s0", "s1", "s2", "s3", "s4"]


async def test_a_step_weir_performs_follows_the_steps_that_ran(app: FastAPI) -> None:
    ops = (await _call(app, "then-sleep")).json()
    assert [o["op"] for o in ops] == ["StepRun", "Sleep"]
    assert ops[1]["displayName"] == "nap" and ops[1]["name"].endswith("Z")  # wake time, UTC
    assert RAN == ["before"]


async def test_a_failing_step_is_reported_after_the_steps_before_it(app: FastAPI) -> None:
    ops = (await _call(app, "then-fail")).json()
    assert [o["op"] for o in ops] == ["StepRun", "StepError"]
    assert ops[1]["error"]["message"] == "broken"
    assert RAN == ["ok", "bad"]


async def test_an_error_that_ends_the_request_keeps_its_steps_and_headers(app: FastAPI) -> None:
    response = await _call(app, "then-raise")
    assert response.status_code == 206
    assert response.headers["x-inngest-no-retry"] == "true"
    ops = response.json()
    assert [o["op"] for o in ops] == ["StepRun", "RunError"]
    assert ops[1]["error"]["name"] == "NonRetriableError"
    assert ops[1]["error"]["message"] == "stop here"


async def test_a_parallel_group_is_planned_after_the_steps_before_it(app: FastAPI) -> None:
    ops = (await _call(app, "then-parallel")).json()
    assert [(o["op"], o["displayName"]) for o in ops] == [
        ("StepRun", "first"),
        ("StepPlanned", "p1"),
        ("StepPlanned", "p2"),
    ]


async def test_a_memoized_step_error_can_be_caught_and_run_on(app: FastAPI) -> None:
    error = {"error": {"name": "ValueError", "message": "broken"}}
    memos = {hash_step_id("ok", None): {"data": 1}, hash_step_id("bad", None): error}
    response = await _call(app, "caught", memos)
    assert response.status_code == 200 and response.json() == "caught broken"
    assert RAN == []


async def test_plain_handlers_are_checkpointed_too(app: FastAPI) -> None:
    ops = (await _call(app, "sync-three")).json()
    assert [o["op"] for o in ops] == ["StepRun"] * 3 + ["RunComplete"]
    assert ops[-1]["data"] == ["X", "Y", "Z"]


async def test_planning_and_targeted_requests_run_one_step_at_most(app: FastAPI) -> None:
    planned = (await _call(app, "three", disable_immediate_execution=True)).json()
    assert [o["op"] for o in planned] == ["StepPlanned"]
    assert RAN == []


async def test_functions_without_checkpoint_stop_at_each_step(app: FastAPI) -> None:
    ops = (await _call(app, "plain")).json()
    assert [o["op"] for o in ops] == ["StepRun"]
    assert RAN == ["a"]


@pytest.mark.parametrize(
    ("checkpoint", "problem"),
    [
        (Checkpoint(max_steps=0), "checkpoint.max_steps: must be an integer from 1 to 1000, got 0"),
        (
            Checkpoint(max_ms=600_000),
            "checkpoint.max_ms: must be an integer from 1 to 300000, got 600000",
        ),
        ("yes", "checkpoint: must be True or a Checkpoint(...), got 'yes'"),
    ],
)
def test_bad_checkpoint_options_are_refused_at_serve(checkpoint: Any, problem: str) -> None:
    weir = Weir("cp-bad", dev=True)
    weir.function("f", event="c/f", checkpoint=checkpoint)(lambda ctx: None)
    with pytest.raises(Exception) as caught:
        serve(FastAPI(), weir)
    assert f"function 'f': {problem}" in str(caught.value)


async def test_a_retried_request_runs_one_new_step_and_answers(app: FastAPI) -> None:
    # its attempt number is the failed step's: a step after it must not inherit it
    first = (await _call(app, "three", attempt=1)).json()
    assert [o["displayName"] for o in first] == ["a"]
    second = (await _call(app, "three", _memos(first), attempt=2)).json()
    assert [o["displayName"] for o in second] == ["b"]
    assert RAN == ["a", "b"]


async def test_a_result_is_saved_as_returned_whatever_happens_to_it_later(app: FastAPI) -> None:
    ops = (await _call(app, "keeps")).json()
    assert [o["op"] for o in ops] == ["StepRun", "StepRun", "RunComplete"]
    assert ops[0]["data"] == {"n": 1}
    assert ops[2]["data"] == {"n": 1, "seen": True}
    replayed = await _call(app, "keeps", _memos(ops))
    assert replayed.json() == ops[2]["data"]  # a replay returns what the first run returned
