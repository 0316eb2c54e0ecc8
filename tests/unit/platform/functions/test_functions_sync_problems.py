"""Bad syncs: every problem names its function and option and says what is allowed."""

from typing import Any

import pytest
from weir.platform.functions import EventTrigger, Problem, SyncError, parse_sync

FN = "app-f"
URL = "http://app:8000/api/inngest"
_DROP = object()  # an override value that removes the key


def function(**overrides: Any) -> dict[str, Any]:
    config: dict[str, Any] = {
        "id": FN,
        "name": "f",
        "triggers": [{"event": "app/e"}],
        "steps": {"step": {"id": "step", "runtime": {"type": "http", "url": f"{URL}?fnId={FN}"}}},
    }
    for key, value in overrides.items():
        config.pop(key) if value is _DROP else config.__setitem__(key, value)
    return config


def body(*functions: dict[str, Any], **overrides: Any) -> dict[str, Any]:
    payload = {"appname": "app", "url": URL, "sdk": "py:v0.5.19", "functions": list(functions)}
    payload.update(overrides)
    return payload


def problems_of(payload: Any) -> list[Problem]:
    with pytest.raises(SyncError) as raised:
        parse_sync(payload)
    return raised.value.problems


def step(url: Any = URL, **extra: Any) -> dict[str, Any]:
    return {"step": {"id": "step", "runtime": {"type": "http", "url": url}, **extra}}


CRON = "0 * * * *"
BAD_CEL = "event.data.x =="
CEL_SYNTAX = "syntax error at line 1"

# (overrides of one function, option named, start of the message)
CASES: list[tuple[dict[str, Any], str, str]] = [
    ({"id": _DROP}, "id", "is missing; it must be a non-empty string"),
    ({"name": _DROP}, "name", "is missing; it must be a non-empty string"),
    ({"name": 3}, "name", "must be a non-empty string, got 3 (a number)"),
    ({"triggers": _DROP}, "triggers", "is missing; it must be a list"),
    ({"triggers": []}, "triggers", "at least one event or cron trigger is required"),
    ({"triggers": "app/e"}, "triggers", "must be a list, got 'app/e' (a string)"),
    (
        {"triggers": [{"event": f"e{i}"} for i in range(11)]},
        "triggers",
        "at most 10 entries are allowed, got 11",
    ),
    (
        {"triggers": [{"event": "a", "cron": CRON}]},
        "triggers[0]",
        "must have exactly one of 'event' or 'cron'",
    ),
    ({"triggers": [None]}, "triggers[0]", "is missing; it must be an object"),
    (
        {"triggers": [{"event": ""}]},
        "triggers[0].event",
        "must be a non-empty string, got '' (a string)",
    ),
    (
        {"triggers": [{"event": "x" * 256}]},
        "triggers[0].event",
        "must be at most 255 characters, got 256",
    ),
    (
        {"triggers": [{"event": "app/*/x"}]},
        "triggers[0].event",
        "'app/*/x': a '*' wildcard may only end the name",
    ),
    ({"triggers": [{"event": "*"}]}, "triggers[0].event", "'*': a '*' wildcard may only end"),
    (
        {"triggers": [{"event": "a", "expression": 5}]},
        "triggers[0].expression",
        "must be an expression string, got 5 (a number)",
    ),
    (
        {"triggers": [{"cron": "@daily"}]},
        "triggers[0].cron",
        "'@daily': a cron needs 5 fields (minute hour day-of-month month day-of-week), got 1",
    ),
    (
        {"triggers": [{"cron": "61 * * * *"}]},
        "triggers[0].cron",
        "'61 * * * *': not a valid cron schedule:",
    ),
    ({"triggers": [{"cron": "x" * 256}]}, "triggers[0].cron", "must be at most 255 characters"),
    (
        {"triggers": [{"cron": f"TZ=Mars/Base {CRON}"}]},
        "triggers[0].cron",
        f"'TZ=Mars/Base {CRON}': unknown time zone 'Mars/Base'; use an IANA name",
    ),
    (
        {"triggers": [{"cron": CRON, "jitter": "500ms"}]},
        "triggers[0].jitter",
        "must be 0 or a duration from 1s to 5m, got '500ms'",
    ),
    (
        {"triggers": [{"cron": CRON, "jitter": "6m"}]},
        "triggers[0].jitter",
        "must be 0 or a duration from 1s to 5m, got '6m'",
    ),
    (
        {"triggers": [{"cron": CRON, "jitter": 30}]},
        "triggers[0].jitter",
        "must be a duration string, like '30s', got 30 (a number)",
    ),
    (
        {"triggers": [{"event": "a"}, {"event": "a"}]},
        "triggers[1]",
        "is the same trigger as triggers[0]",
    ),
    (
        {"triggers": [{"cron": CRON}, {"cron": CRON, "jitter": "5s"}]},
        "triggers[1]",
        "repeats the cron schedule of triggers[0]",
    ),
    ({"steps": _DROP}, "steps", "is missing; it must be an object"),
    ({"steps": {}}, "steps", "must hold exactly one step (keyed 'step'), got 0"),
    (
        {"steps": step("ftp://app/x")},
        "steps.step.runtime.url",
        "must be an http:// or https:// URL, got 'ftp://app/x' (a string)",
    ),
    (
        {"steps": step(None)},
        "steps.step.runtime.url",
        "is missing; it must be an http:// or https:// URL",
    ),
    ({"steps": {"step": {"runtime": None}}}, "steps.step.runtime", "is missing"),
    (
        {"steps": step(retries={"attempts": -1})},
        "steps.step.retries.attempts",
        "must be an integer ≥ 0, got -1",
    ),
    (
        {"steps": step(retries={"attempts": "3"})},
        "steps.step.retries.attempts",
        "must be an integer ≥ 0, got '3' (a string)",
    ),
    (
        {"steps": step(retries={"attempts": True})},
        "steps.step.retries.attempts",
        "must be an integer ≥ 0, got true (a boolean)",
    ),
    (
        {"concurrency": [{"limit": 1}, {"limit": 2}, {"limit": 3}]},
        "concurrency",
        "at most 2 entries are allowed, got 3",
    ),
    ({"concurrency": [{"limit": -1}]}, "concurrency[0].limit", "must be an integer ≥ 0, got -1"),
    (
        {"concurrency": [{"limit": 5.0}]},
        "concurrency[0].limit",
        "must be an integer ≥ 0, got 5.0 (a number)",
    ),
    (
        {"concurrency": [{"limit": 1, "scope": "env"}]},
        "concurrency[0].key",
        "is required when scope is 'env'",
    ),
    (
        {"concurrency": [{"limit": 1, "scope": "account", "key": ""}]},
        "concurrency[0].key",
        "is required when scope is 'account'",
    ),
    (
        {"concurrency": [{"limit": 1, "scope": "world"}]},
        "concurrency[0].scope",
        "must be 'fn', 'env' or 'account', got 'world' (a string)",
    ),
    ({"throttle": {"limit": 0, "period": "1m"}}, "throttle.limit", "must be an integer ≥ 1, got 0"),
    (
        {"throttle": {"limit": 1, "period": "500ms"}},
        "throttle.period",
        "must be a duration of at least 1s, got '500ms'",
    ),
    (
        {"throttle": {"limit": 1, "period": "1m", "burst": -1}},
        "throttle.burst",
        "must be an integer ≥ 0, got -1",
    ),
    ({"throttle": "1/s"}, "throttle", "must be an object, got '1/s' (a string)"),
    (
        {"throttle": {"limit": 1}},
        "throttle.period",
        "is missing; it must be a duration string of at least 1s, like '30s'",
    ),
    (
        {"rateLimit": {"limit": 1, "period": "25h"}},
        "rateLimit.period",
        "must be a duration from 1s to 1d, got '25h'",
    ),
    (
        {"rateLimit": {"limit": 0, "period": "1h"}},
        "rateLimit.limit",
        "must be an integer ≥ 1, got 0",
    ),
    (
        {"rateLimit": {"limit": 1, "period": "1 hour"}},
        "rateLimit.period",
        "'1 hour' is not a duration; use whole units like '30s'",
    ),
    ({"debounce": {"period": "8d"}}, "debounce.period", "must be a duration from 1s to 1w"),
    ({"debounce": {"period": "500ms"}}, "debounce.period", "must be a duration from 1s to 1w"),
    (
        {"debounce": {"period": "1s", "timeout": "0s"}},
        "debounce.timeout",
        "must be a duration of at least 1s, got '0s'",
    ),
    (
        {"batchEvents": {"maxSize": 1, "timeout": "5s"}},
        "batchEvents.maxSize",
        "must be an integer ≥ 2, got 1",
    ),
    ({"batchEvents": {"maxSize": 5}}, "batchEvents.timeout", "is missing"),
    (
        {"batchEvents": {"maxSize": 5, "timeout": "5s", "if": BAD_CEL}},
        "batchEvents.if",
        f"invalid expression '{BAD_CEL}' (variables: event): {CEL_SYNTAX}",
    ),
    (
        {"singleton": {"mode": "queue"}},
        "singleton.mode",
        "must be 'skip' or 'cancel', got 'queue' (a string)",
    ),
    ({"singleton": {}}, "singleton.mode", "is missing; it must be 'skip' or 'cancel'"),
    ({"singleton": {"mode": "skip", "key": BAD_CEL}}, "singleton.key", "invalid expression"),
    ({"priority": {"run": BAD_CEL}}, "priority.run", "invalid expression"),
    ({"idempotency": 7}, "idempotency", "must be an expression string, got 7 (a number)"),
    ({"idempotency": "nope.x"}, "idempotency", "invalid expression 'nope.x' (variables: event)"),
    (
        {"throttle": {"limit": 1, "period": "1s", "key": "async.x"}},
        "throttle.key",
        "invalid expression 'async.x' (variables: event)",
    ),
    ({"cancel": [{"event": "a"}] * 6}, "cancel", "at most 5 entries are allowed, got 6"),
    ({"cancel": {"event": "a"}}, "cancel", "must be a list, got an object"),
    ({"cancel": [{"event": ""}]}, "cancel[0].event", "must be a non-empty string"),
    (
        {"cancel": [{"event": "a", "timeout": "0s"}]},
        "cancel[0].timeout",
        "must be a duration of at least 1s, got '0s'",
    ),
    (
        {"cancel": [{"event": "a", "if": "bad.x"}]},
        "cancel[0].if",
        "invalid expression 'bad.x' (variables: event, async)",
    ),
    (
        {"cancel": [{"event": "a", "match": 5}]},
        "cancel[0].match",
        "must be a field path like 'data.user_id', got 5 (a number)",
    ),
    ({"timeouts": {"start": "0s"}}, "timeouts.start", "must be a duration of at least 1s"),
    (
        {"timeouts": {"finish": 10}},
        "timeouts.finish",
        "must be a duration string of at least 1s, like '30s', got 10 (a number)",
    ),
]


@pytest.mark.parametrize(("overrides", "option", "message"), CASES)
def test_each_bad_option_is_one_named_problem(
    overrides: dict[str, Any], option: str, message: str
) -> None:
    [problem] = problems_of(body(function(**overrides)))
    label = FN if "id" not in overrides else "functions[0]"
    assert (problem.function, problem.option) == (label, option)
    assert problem.message.startswith(message), problem.message


def test_batching_refuses_per_run_options() -> None:
    batched = function(
        batchEvents={"maxSize": 5, "timeout": "5s"},
        cancel=[{"event": "app/stop"}],
        debounce={"period": "5s"},
        singleton={"mode": "skip"},
        priority={"run": "1"},
    )
    assert problems_of(body(batched)) == [
        Problem(FN, "cancel", "cancel-on cannot be combined with batching (batchEvents)"),
        Problem(FN, "debounce", "debounce cannot be combined with batching (batchEvents)"),
        Problem(FN, "singleton", "singleton cannot be combined with batching (batchEvents)"),
        Problem(FN, "priority", "priority cannot be combined with batching (batchEvents)"),
    ]


def test_batching_allows_empty_cancel_and_no_priority_run() -> None:
    batched = function(batchEvents={"maxSize": 5, "timeout": "5s"}, cancel=[], priority={})
    assert parse_sync(body(batched)).functions[0].batching is not None


def test_every_problem_of_every_function_at_once() -> None:
    payload = body(
        function(id="app-a", throttle={"limit": 0, "period": "1s"}),
        function(id="app-b", triggers=[], rateLimit={"limit": 1, "period": "2d"}),
        function(id="app-c"),
        {"name": "no id", "triggers": [{"cron": "bad"}], "steps": step()},
        "not a function",
    )
    found = [(problem.function, problem.option) for problem in problems_of(payload)]
    assert found == [
        ("app-a", "throttle.limit"),
        ("app-b", "triggers"),
        ("app-b", "rateLimit.period"),
        ("functions[3]", "id"),
        ("functions[3]", "triggers[0].cron"),
        ("functions[4]", None),
    ]


def test_the_error_message_lists_every_problem() -> None:
    payload = body(
        function(id="x", throttle={"limit": 1, "period": "0s"}), function(id="y", name="")
    )
    with pytest.raises(SyncError) as raised:
        parse_sync(payload)
    assert str(raised.value) == (
        "the app sync was refused (2 problems):\n"
        "- function 'x', option 'throttle.period': must be a duration of at least 1s, got '0s'\n"
        "- function 'y', option 'name': must be a non-empty string, got '' (a string)"
    )
    assert isinstance(raised.value, ValueError)


def test_duplicate_function_ids() -> None:
    assert problems_of(body(function(), function())) == [
        Problem(FN, "id", "another function of this app has the same id")
    ]


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        ([], [Problem(None, None, "must be an object, got a list")]),
        (None, [Problem(None, None, "is missing; it must be an object")]),
        (
            body(appname=None),
            [Problem(None, "appName", "is missing; it must be a non-empty string")],
        ),
        (
            body(url="app:8000"),
            [
                Problem(
                    None,
                    "url",
                    "must be the app's http:// or https:// serve URL, got 'app:8000' (a string)",
                )
            ],
        ),
        (body(sdk=1), [Problem(None, "sdk", "must be a non-empty string, got 1 (a number)")]),
        (
            body(deploy_type=False),
            [Problem(None, "deployType", "must be a non-empty string, got false (a boolean)")],
        ),
        (body(functions=None), [Problem(None, "functions", "is missing; it must be a list")]),
    ],
)
def test_app_level_problems(payload: Any, expected: list[Problem]) -> None:
    assert problems_of(payload) == expected


def test_problem_text_names_function_and_option() -> None:
    assert str(Problem("x", "throttle.period", "too short")) == (
        "function 'x', option 'throttle.period': too short"
    )
    assert str(Problem(None, "url", "bad")) == "option 'url': bad"
    assert str(Problem(None, None, "bad")) == "bad"


def test_retries_above_twenty_are_capped_silently() -> None:
    sync = parse_sync(body(function(steps=step(retries={"attempts": 99}))))
    assert sync.functions[0].retries == 20


def test_match_is_folded_into_the_cancel_condition() -> None:
    cancel = [{"event": "app/stop", "match": "data.id", "if": "async.data.n > 1"}]
    [folded] = parse_sync(body(function(cancel=cancel))).functions[0].cancel_on
    assert folded.if_expr == "(event.data.id == async.data.id) && (async.data.n > 1)"


def test_concurrency_as_a_number_or_a_single_object() -> None:
    assert parse_sync(body(function(concurrency=3))).functions[0].concurrency[0].limit == 3
    single = function(concurrency={"limit": 2, "key": "event.data.u"})
    assert parse_sync(body(single)).functions[0].concurrency[0].key == "event.data.u"


def test_empty_expressions_mean_none() -> None:
    sync = parse_sync(body(function(idempotency="", triggers=[{"event": "a", "expression": ""}])))
    assert sync.functions[0].idempotency is None
    assert sync.functions[0].triggers == (EventTrigger("a", None),)
