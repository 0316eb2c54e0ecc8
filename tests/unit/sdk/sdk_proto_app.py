"""The captured harness app of protocol-fixtures/, rebuilt with weir.sdk, plus test helpers."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from fastapi import FastAPI
from weir.sdk import (
    Batch,
    Cancel,
    Concurrency,
    Context,
    ContextSync,
    Debounce,
    Event,
    NonRetriableError,
    RateLimit,
    RetryAfterError,
    Singleton,
    Throttle,
    Timeouts,
    TriggerCron,
    TriggerEvent,
    Weir,
    serve,
)

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "protocol"
APP_URL = "http://127.0.0.1:18000/api/inngest"
PRIMARY_KEY = "signkey-test-" + "12" * 32
FALLBACK_KEY = "signkey-test-" + "ab" * 32
FIXED_UNTIL = datetime(2030, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)


def fixture(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text())


def event_dict(event: Event) -> dict[str, Any]:
    # The official SDK's field order, so that raw bodies (and their signatures) match.
    return {"data": event.data, "id": event.id, "name": event.name, "ts": event.ts}


def build(weir: Weir) -> None:  # one declaration per captured function
    @weir.function("child", event="app/child")
    async def child(ctx: Context) -> Any:
        return {"child_got": ctx.event.data.get("n")}

    @weir.function("steps-all", event="app/steps")
    async def steps_all(ctx: Context) -> Any:
        a = [await ctx.step.run("work", lambda n=n: {"n": n}) for n in (1, 2, 3)]
        await ctx.step.sleep("nap", "10s")
        await ctx.step.sleep_until("until", FIXED_UNTIL)
        approved = await ctx.step.wait_for_event(
            "wait-approval",
            event="app/approved",
            if_exp="async.data.id == event.data.id",
            timeout="1h",
        )
        timed_out = await ctx.step.wait_for_event("wait-never", event="app/never", timeout="30s")
        invoked = await ctx.step.invoke(
            "call-child", function=child, data={"n": 21}, timeout=timedelta(minutes=5)
        )
        sent = await ctx.step.send_event("send", Event(name="app/sent", data={"from": "steps-all"}))
        return {
            "a": a,
            "approved": approved.data if approved else None,
            "approved_name": approved.name if approved else None,
            "timed_out": timed_out,
            "invoked": invoked,
            "sent_ids": sent,
        }

    @weir.function("parallel-wait", event="app/parallel")
    async def parallel_wait(ctx: Context) -> Any:
        results = await ctx.step.parallel(
            [
                lambda: ctx.step.run("p1", lambda: "one"),
                lambda: ctx.step.run("p2", lambda: "two"),
                lambda: ctx.step.run("p3", lambda: "three"),
            ]
        )
        after = await ctx.step.run("after", lambda: "after-parallel")
        return {"parallel": list(results), "after": after}

    @weir.function("step-error", event="app/step-error", retries=2)
    async def step_error(ctx: Context) -> Any:
        def flaky() -> None:
            raise ValueError(f"flaky failure on attempt {ctx.attempt}")

        return await ctx.step.run("flaky", flaky)

    @weir.function("step-nonretriable", event="app/step-nr")
    async def step_nonretriable(ctx: Context) -> None:
        def bad() -> None:
            raise NonRetriableError("do not retry me")

        await ctx.step.run("bad", bad)

    @weir.function("step-retry-after", event="app/step-ra")
    async def step_retry_after(ctx: Context) -> None:
        def later() -> None:
            raise RetryAfterError("try later", retry_after=FIXED_UNTIL)

        await ctx.step.run("later", later)

    @weir.function("fn-error", event="app/fn-error")
    async def fn_error(ctx: Context) -> None:
        raise ValueError("plain function error")

    @weir.function("fn-nonretriable", event="app/fn-nr")
    async def fn_nonretriable(ctx: Context) -> None:
        raise NonRetriableError("fatal function error")

    @weir.function("fn-retry-after", event="app/fn-ra")
    async def fn_retry_after(ctx: Context) -> None:
        raise RetryAfterError("rate limited upstream", retry_after=timedelta(seconds=90))

    @weir.function("returns-none", event="app/none")
    async def returns_none(ctx: Context) -> None:
        return None

    @weir.function("echo", event="app/echo")
    async def echo(ctx: Context) -> Any:
        return {
            "event": event_dict(ctx.event),
            "events_len": len(ctx.events),
            "attempt": ctx.attempt,
            "run_id": ctx.run_id,
            "job_id": ctx.job_id,
            "request_id": ctx.request_id,
        }

    @weir.function("nested-step", event="app/nested")
    async def nested_step(ctx: Context) -> None:
        async def outer() -> Any:
            return await ctx.step.run("inner", lambda: 1)

        await ctx.step.run("outer", outer)

    @weir.function("unserializable", event="app/unser")
    async def unserializable(ctx: Context) -> None:
        await ctx.step.run("bad-output", lambda: object())

    @weir.function("sync-steps", event="app/sync")
    def sync_steps(ctx: ContextSync) -> Any:
        one = ctx.step.run("s1", lambda: 1)
        two = ctx.step.run("s2", lambda: one + 1)
        return {"sum": one + two}

    @weir.function("parallel-race", event="app/parallel-race")
    async def parallel_race(ctx: Context) -> Any:
        return await ctx.step.race(
            "winner",
            [
                lambda: ctx.step.run("r1", lambda: 1),
                lambda: ctx.step.sleep("r-sleep", "5s"),
            ],
        )

    build_configs(weir)


def build_configs(weir: Weir) -> None:
    """The `cfg-*` functions whose register configs are captured in dev_register_payload."""

    async def noop(ctx: Context) -> None:
        return None

    weir.function(
        "cfg-flow",
        name="Config: flow control",
        event="app/flow",
        expression="event.data.tier == 'pro'",
        retries=7,
        concurrency=[Concurrency(5), Concurrency(2, key="event.data.user_id", scope="fn")],
        throttle=Throttle(10, "1m", burst=3, key="event.data.user_id"),
        rate_limit=RateLimit(100, "1h", key="event.data.org"),
        idempotency="event.data.order_id",
        priority="event.data.priority",
        singleton=Singleton("skip", key="event.data.user_id"),
        cancel_on=[
            Cancel("app/flow.cancel", if_exp="async.data.id == event.data.id", timeout="1d"),
            Cancel("app/flow.abort"),
        ],
        timeouts=Timeouts(start="30s", finish="5m"),
    )(noop)
    weir.function(
        "cfg-concurrency-scopes",
        event="app/scopes",
        concurrency=[
            Concurrency(10, key="event.data.account", scope="account"),
            Concurrency(3, key="event.data.env", scope="env"),
        ],
        rate_limit=RateLimit(1, timedelta(minutes=1)),
        throttle=Throttle(1, "5s", burst=1),
        timeouts=Timeouts(finish="2h"),
    )(noop)
    weir.function(
        "cfg-debounce",
        event="app/debounce",
        debounce=Debounce("10s", key="event.data.user_id", timeout="1m"),
    )(noop)
    weir.function(
        "cfg-batch",
        event="app/batch",
        batch_events=Batch(
            50, "5s", key="event.data.user_id", if_exp="event.data.batchable == true"
        ),
    )(noop)
    weir.function("cfg-cron", cron="*/5 * * * *", singleton=Singleton("cancel"))(noop)
    weir.function(
        "cfg-cron-jitter", triggers=[TriggerCron("TZ=Europe/Paris 0 12 * * 1-5", jitter="30s")]
    )(noop)
    weir.function(
        "cfg-multi-trigger",
        triggers=[
            TriggerEvent("app/a"),
            TriggerEvent("app/b", "event.data.ok == true"),
            TriggerCron("0 0 * * *"),
        ],
    )(noop)

    async def failed(ctx: Context) -> Any:
        return {"failed_fn": ctx.event.data["function_id"], "orig": ctx.event.data["event"]["name"]}

    async def with_failure(ctx: Context) -> None:
        raise ValueError("boom at function level")

    weir.function("with-failure", event="app/fail", retries=0, on_failure=failed)(with_failure)


def make_app(
    *, transport: httpx.MockTransport | None = None, **settings: Any
) -> tuple[FastAPI, Weir]:
    settings.setdefault("dev", True)
    weir = Weir("proto-app", app_version="v-test-1", transport=transport, **settings)
    build(weir)
    app = FastAPI()
    serve(app, weir)
    return app, weir


def cloud_settings() -> dict[str, Any]:
    return {
        "dev": False,
        "signing_key": PRIMARY_KEY,
        "signing_key_fallback": FALLBACK_KEY,
        "event_key": "test-event-key-123",
        "env": "my-branch",
        "base_url": "http://127.0.0.1:18288",
    }


def client_for(app: FastAPI) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1:18000"
    )


async def replay(app: FastAPI, exchange: dict[str, Any]) -> httpx.Response:
    """Send a captured request (URL, headers, JSON body) to the app."""
    request = exchange["request"]
    async with client_for(app) as client:
        return await client.post(
            request["url"], headers=request["headers"], content=json.dumps(request["body"])
        )


def without_stacks(value: Any) -> Any:
    """Tracebacks differ between implementations: compare everything else."""
    if isinstance(value, dict):
        return {k: without_stacks(v) for k, v in value.items() if k != "stack"}
    if isinstance(value, list):
        return [without_stacks(v) for v in value]
    return value
