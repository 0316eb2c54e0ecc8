"""Mistakes a developer can find from the error alone: a step left without `await`, a result
that is not JSON (named with its type), a step's traceback in the app's log, and a
`ctx.logger` that is silent while memoized steps replay."""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import sys
import warnings
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from weir.sdk import Context, ContextSync, Weir, serve
from weir.sdk._logs import ReplayLogger
from weir.sdk._steps.ops import hash_step_id

from tests.unit.sdk.sdk_proto_app import client_for, fixture, make_app, replay

weir = Weir("dbg", dev=True)


def _charge_card() -> None:
    raise ValueError("card declined")


@weir.function("forgets-await", event="d/forget")
async def forgets_await(ctx: Context) -> str:
    ctx.step.run("charge", lambda: 1)  # type: ignore[unused-awaitable]  # the mistake
    return "done"


@weir.function("forgets-await-then-steps", event="d/forget2")
async def forgets_await_then_steps(ctx: Context) -> int:
    ctx.step.sleep("pause", "1s")  # type: ignore[unused-awaitable]  # the mistake
    return await ctx.step.run("next", lambda: 2)


@weir.function("awaits-later", event="d/later")
async def awaits_later(ctx: Context) -> int:
    call = ctx.step.run("a", lambda: 1)
    return await call


@weir.function("uses-asyncio", event="d/asyncio")
async def uses_asyncio(ctx: Context) -> int:
    [a] = await asyncio.gather(ctx.step.run("a", lambda: 1))
    return await asyncio.create_task(ctx.step.run("b", lambda: a + 1))


@weir.function("returns-datetime", event="d/dt")
async def returns_datetime(ctx: Context) -> Any:
    return await ctx.step.run("load", lambda: {"id": 1, "when": datetime(2030, 1, 1, tzinfo=UTC)})


@weir.function("sync-returns-coroutine", event="d/coro")
def sync_returns_coroutine(ctx: ContextSync) -> Any:
    async def fetch() -> int:
        return 1

    return ctx.step.run("fetch", fetch)


@weir.function("returns-set", event="d/set")
async def returns_set(ctx: Context) -> Any:
    return {"ids": {1, 2}}


@weir.function("raises", event="d/raise", retries=2)
async def raises(ctx: Context) -> None:
    await ctx.step.run("charge", _charge_card)


@weir.function("logs", event="d/log")
async def logs(ctx: Context) -> str:
    ctx.logger.info("started %s", ctx.event.data["n"])
    a = await ctx.step.run("a", lambda: ctx.logger.info("inside a") or 1)
    ctx.logger.warning("after a: %s", a)
    b = await ctx.step.run("b", lambda: 2)
    ctx.logger.info("after b: %s", b)
    return "ok"


app = FastAPI()
serve(app, weir)


async def call(fn: str, steps: dict[str, Any] | None = None, attempt: int = 0) -> httpx.Response:
    event = {"name": "d/x", "data": {"n": 7}, "id": "e1", "ts": 1}
    body = {
        "event": event,
        "events": [event],
        "steps": steps or {},
        "use_api": False,
        "ctx": {
            "run_id": "r1",
            "attempt": attempt,
            "max_attempts": 3,
            "disable_immediate_execution": False,
            "stack": {},
        },
    }
    async with client_for(app) as client:
        return await client.post(
            f"/api/inngest?fnId=dbg-{fn}&stepId=step", content=json.dumps(body)
        )


def memo(step_id: str, value: Any) -> dict[str, Any]:
    return {hash_step_id(step_id, None): {"data": value}}


async def test_a_step_without_await_fails_naming_the_step() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        response = await call("forgets-await")
        gc.collect()
    assert response.status_code == 500
    assert response.headers["x-inngest-no-retry"] == "true"
    body = response.json()
    assert body["code"] == "step_not_awaited"
    assert 'step "charge" was never awaited' in body["message"]
    assert not [w for w in caught if "never awaited" in str(w.message)]  # closed, not leaked


async def test_a_skipped_step_is_caught_at_the_next_step() -> None:
    response = await call("forgets-await-then-steps")
    assert response.status_code == 500
    assert 'step "pause" was never awaited' in response.json()["message"]


async def test_awaiting_a_step_later_is_fine() -> None:
    response = await call("awaits-later")
    assert response.status_code == 206
    assert response.json()[0]["op"] == "StepRun"


async def test_steps_still_work_with_gather_and_create_task() -> None:
    first = await call("uses-asyncio")
    assert first.status_code == 206 and first.json()[0]["displayName"] == "a"
    second = await call("uses-asyncio", memo("a", 1))
    assert second.status_code == 206 and second.json()[0]["data"] == 2
    assert (await call("uses-asyncio", memo("a", 1) | memo("b", 2))).json() == 2


async def test_a_non_json_step_result_names_the_step_the_place_and_the_type() -> None:
    response = await call("returns-datetime")
    assert response.status_code == 500
    body = response.json()
    assert body["code"] == "output_unserializable"
    assert body["message"].startswith('"load" returned unserializable data: ')
    assert "the result['when'] is of type datetime" in body["message"]


@pytest.mark.filterwarnings("ignore:coroutine .* was never awaited")  # the user's own coroutine
async def test_a_coroutine_result_asks_about_await() -> None:
    response = await call("sync-returns-coroutine")
    message = response.json()["message"]
    assert '"fetch"' in message and "coroutine" in message and "forget to await" in message


async def test_a_non_json_return_value_names_the_type() -> None:
    response = await call("returns-set")
    assert response.status_code == 500
    assert "the return value['ids'] is of type set" in response.json()["message"]


async def test_captured_unserializable_keeps_the_official_code_and_prefix() -> None:
    captured = fixture("opcodes/unserializable_output.json")
    response = await replay(make_app()[0], captured)
    expected = captured["response"]["body"]
    assert response.status_code == 500
    body = response.json()
    assert (body["code"], body["name"]) == (expected["code"], expected["name"])
    assert body["message"].startswith(expected["message"])
    assert "of type object" in body["message"]


async def test_a_failing_step_is_logged_with_its_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.ERROR, logger="weir.sdk")
    response = await call("raises")
    assert response.status_code == 206 and response.json()[0]["op"] == "StepError"
    [record] = [r for r in caplog.records if r.name == "weir.sdk"]
    assert 'step "charge" raised ValueError (attempt 1)' in record.getMessage()
    assert record.exc_info is not None
    assert "_charge_card" in caplog.text and "card declined" in caplog.text


def _function_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "weir.sdk.function"]


async def test_ctx_logger_is_silent_while_replaying(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="weir.sdk.function")
    await call("logs")
    assert _function_lines(caplog) == ["started 7", "inside a"]
    caplog.clear()
    await call("logs", memo("a", 1))
    assert _function_lines(caplog) == ["after a: 1"]
    caplog.clear()
    await call("logs", memo("a", 1) | memo("b", 2))
    assert _function_lines(caplog) == ["after b: 2"]


async def test_ctx_logger_records_carry_the_run(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="weir.sdk.function")
    await call("logs")
    record = next(r for r in caplog.records if r.name == "weir.sdk.function")
    assert (record.run_id, record.function) == ("r1", "dbg-logs")  # type: ignore[attr-defined]
    assert record.funcName == "logs"  # points at the handler, not at the SDK


def test_the_sdks_lines_go_to_stderr_until_the_app_configures_logging(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """No handler anywhere (a plain uvicorn app): INFO and up on stderr. A level set on a
    weir.sdk logger still holds. Once the app adds a handler, its configuration decides."""
    root, sdk = logging.getLogger(), logging.getLogger("weir.sdk")
    kept, level = list(root.handlers), root.level
    root.handlers[:] = []  # as in a process that configured no logging (pytest adds some)
    try:
        logger = ReplayLogger(lambda: False, {"run_id": "R1", "function": "shop-f"})
        logger.info("loaded %s", "o-1")
        logger.debug("not shown")
        sdk.setLevel(logging.WARNING)
        logger.info("below the level set on weir.sdk")
        sdk.setLevel(logging.NOTSET)
        root.addHandler(logging.StreamHandler(sys.stderr))  # as logging.basicConfig() does
        root.setLevel(logging.WARNING)
        logger.info("below the app's own level")
        logger.warning("the app's handler writes this")
    finally:
        root.handlers[:], sdk.level = kept, logging.NOTSET
        root.setLevel(level)
    assert capsys.readouterr().err.splitlines() == [
        "INFO weir.sdk.function: loaded o-1 (function shop-f, run R1)",
        "the app's handler writes this",
    ]
