"""The official SDK's captured sync parses completely, and configs round-trip for storage."""

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from weir.platform.functions import (
    Batching,
    CancelOn,
    ConcurrencyLimit,
    CronTrigger,
    Debounce,
    EventTrigger,
    FunctionConfig,
    RateLimit,
    Singleton,
    Throttle,
    Timeouts,
    parse_sync,
)

# Copies of docs/protocol-fixtures/register/: what inngest-py 0.5.19 sends to /fn/register.
FIXTURES = Path(__file__).parent / "fixtures"
APP_URL = "http://127.0.0.1:18000/api/inngest"


def _payload() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / "dev_register_payload.json").read_text())
    return data


def _functions() -> dict[str, FunctionConfig]:
    return {config.slug: config for config in parse_sync(_payload()).functions}


def test_the_app_fields() -> None:
    sync = parse_sync(_payload())
    assert (sync.app_name, sync.url, sync.sdk) == ("proto-app", APP_URL, "py:v0.5.19")
    assert (sync.framework, sync.app_version) == ("fast_api", "v-test-1")
    assert len(sync.functions) == len(_payload()["functions"]) == 26
    assert len(sync.checksum) == 64


def test_the_request_fixture_carries_the_same_payload() -> None:
    request = json.loads((FIXTURES / "dev_register_request.json").read_text())
    assert parse_sync(request["json"]) == parse_sync(_payload())


def test_a_function_with_every_flow_control_option() -> None:
    flow = _functions()["proto-app-cfg-flow"]
    assert flow.name == "Config: flow control"
    assert flow.url == f"{APP_URL}?fnId=proto-app-cfg-flow&stepId=step"
    assert flow.retries == 7
    assert flow.triggers == (EventTrigger("app/flow", "event.data.tier == 'pro'"),)
    assert flow.concurrency == (
        ConcurrencyLimit(5, None, "fn"),
        ConcurrencyLimit(2, "event.data.user_id", "fn"),
    )
    assert flow.throttle == Throttle(10, 60_000, 3, "event.data.user_id")
    assert flow.rate_limit == RateLimit(100, 3_600_000, "event.data.org")
    assert flow.singleton == Singleton("skip", "event.data.user_id")
    assert (flow.idempotency, flow.priority_run) == ("event.data.order_id", "event.data.priority")
    assert flow.cancel_on == (
        CancelOn("app/flow.cancel", "async.data.id == event.data.id", 86_400_000),
        CancelOn("app/flow.abort", None, None),
    )
    assert flow.timeouts == Timeouts(30_000, 300_000)


def test_scopes_debounce_batching_and_defaults() -> None:
    functions = _functions()
    scopes = functions["proto-app-cfg-concurrency-scopes"]
    assert [limit.scope for limit in scopes.concurrency] == ["account", "env"]
    assert scopes.throttle == Throttle(1, 5_000, 1, None)
    assert scopes.timeouts == Timeouts(None, 7_200_000)
    assert functions["proto-app-cfg-debounce"].debounce == Debounce(
        10_000, "event.data.user_id", 60_000
    )
    assert functions["proto-app-cfg-batch"].batching == Batching(
        50, 5_000, "event.data.user_id", "event.data.batchable == true"
    )
    assert functions["proto-app-ai-infer"].retries == 4  # absent: the server default


def test_cron_triggers() -> None:
    functions = _functions()
    assert functions["proto-app-cfg-cron"].triggers == (CronTrigger("*/5 * * * *", None, 0),)
    assert functions["proto-app-cfg-cron-jitter"].triggers == (
        CronTrigger("0 12 * * 1-5", "Europe/Paris", 30_000),
    )
    assert functions["proto-app-cfg-multi-trigger"].triggers[2] == CronTrigger("0 0 * * *", None, 0)


def test_the_failure_handler_is_an_ordinary_function() -> None:
    failure = _functions()["proto-app-with-failure-failure"]
    assert failure.name == "with-failure (failure)"
    assert failure.retries == 0
    assert (failure.cancel_on, failure.concurrency) == ((), ())
    assert failure.triggers == (
        EventTrigger(
            "inngest/function.failed", "event.data.function_id == 'proto-app-with-failure'"
        ),
    )


def test_raw_keeps_the_config_as_received() -> None:
    payload = _payload()
    sync = parse_sync(copy.deepcopy(payload))
    assert [dict(config.raw) for config in sync.functions] == payload["functions"]


@pytest.mark.parametrize("index", range(26))
def test_configs_round_trip_through_json(index: int) -> None:
    config = parse_sync(_payload()).functions[index]
    stored = json.loads(json.dumps(config.to_json()))
    assert FunctionConfig.from_json(stored) == config


def test_configs_are_immutable_and_hashable() -> None:
    config = _functions()["proto-app-cfg-flow"]
    with pytest.raises(AttributeError):
        config.retries = 1  # type: ignore[misc]
    assert hash(config) == hash(FunctionConfig.from_json(config.to_json()))


def test_checksum_ignores_key_order_but_not_content() -> None:
    payload = _payload()
    reordered = dict(reversed(list(payload.items())))
    assert parse_sync(reordered).checksum == parse_sync(payload).checksum
    payload["appVersion"] = "v-test-2"
    assert parse_sync(payload).checksum != parse_sync(reordered).checksum


def test_camel_case_app_keys_are_accepted() -> None:
    payload = _payload()
    payload["appName"] = payload.pop("appname")
    payload["deployType"] = payload.pop("deploy_type")
    assert parse_sync(payload).app_name == "proto-app"
