"""classify() takes whatever an app answers: any bytes, status and headers give an outcome
(completed, ops, steps run one after another in the request, or a failed attempt with a
message), never an exception."""

import json
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from weir.platform.executor.response import (
    SAVED_STEP_OPS,
    AttemptFailed,
    Checkpointed,
    Completed,
    Ops,
    RawResponse,
    classify,
    parse_retry_after,
)

NOW = 1_700_000_000_000
HEADER_NAMES = st.sampled_from(
    ["x-inngest-sdk", "x-inngest-no-retry", "retry-after", "content-type", "x-other"]
)
HEADERS = st.dictionaries(HEADER_NAMES, st.text(max_size=40), max_size=5)
STATUSES = st.sampled_from([200, 201, 206, 400, 401, 404, 500, 502]) | st.integers(100, 599)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=12,
)
OP_LIKE = st.dictionaries(
    st.sampled_from(["op", "id", "name", "displayName", "opts", "data", "error", "x"]),
    JSON_VALUES | st.sampled_from(["StepRun", "Sleep", "WaitForEvent", "Nope", "s1"]),
)


def check(outcome: Any) -> None:
    if isinstance(outcome, Checkpointed):  # saved steps first, then what ended the request
        assert outcome.steps and all(o.op in SAVED_STEP_OPS for o in outcome.steps)
        if outcome.then is not None:
            check(outcome.then)
        return
    assert isinstance(outcome, Completed | Ops | AttemptFailed)
    if isinstance(outcome, AttemptFailed):
        assert isinstance(outcome.error.get("message"), str) and outcome.error["message"]


@settings(max_examples=250, deadline=None)
@given(STATUSES, HEADERS, st.binary(max_size=200))
def test_any_bytes_status_and_headers_classify_without_raising(
    status: int, headers: dict[str, str], body: bytes
) -> None:
    check(classify(RawResponse(status, headers | {"x-inngest-sdk": "py:v1"}, body), NOW))
    check(classify(RawResponse(status, headers, body), NOW))


@settings(max_examples=250, deadline=None)
@given(st.sampled_from([200, 201, 206]), HEADERS, JSON_VALUES | st.lists(OP_LIKE, max_size=4))
@example(206, {}, [{"op": "StepRun"}, {"op": "StepRun"}])  # two steps run in one request
def test_any_json_classifies_without_raising(
    status: int, headers: dict[str, str], value: Any
) -> None:
    body = json.dumps(value).encode()
    check(classify(RawResponse(status, headers | {"x-inngest-sdk": "py:v1"}, body), NOW))


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
def test_any_retry_after_header_parses_or_is_ignored(value: str) -> None:
    at = parse_retry_after(value, NOW)
    assert at is None or NOW + 1000 <= at <= NOW + 24 * 3600 * 1000


def test_deeply_nested_json_is_an_invalid_response_not_a_crash() -> None:
    deep = b"[" * 100_000 + b"]" * 100_000
    for status in (200, 206, 500):
        check(classify(RawResponse(status, {"x-inngest-sdk": "py:v1"}, deep), NOW))


@pytest.mark.parametrize(
    ("body", "where"),
    [
        (b'{"x": NaN}', "output.x is NaN"),
        (b"[1e400]", "output[0] is Infinity"),
        (b'{"n": 9007199254740992}', "output.n is 9007199254740992"),
        (b'[{"op":"StepRun","id":"a","data":-Infinity}]', "'a': data is -Infinity"),
        (b'[{"op":"StepRun","id":"a","data":{"n":[-1e999]}}]', "'a': data.n[0] is -Infinity"),
        (b'[{"op":"StepRun","id":"a","data":{"n":-9007199254740992}}]', "'a': data.n is"),
        (b'[{"op":"StepError","id":"a","error":{"name":"E","message":"m","x":NaN}}]', "error.x"),
    ],
)
def test_numbers_that_cannot_be_sent_back_fail_at_once_naming_where(
    body: bytes, where: str
) -> None:
    status = 200 if b'"op"' not in body else 206
    outcome = classify(RawResponse(status, {"x-inngest-sdk": "py:v1"}, body), NOW)
    assert isinstance(outcome, AttemptFailed), body
    assert where in outcome.error["message"] and "±(2^53-1)" in outcome.error["message"]
    assert outcome.no_retry  # the same code would answer the same


def test_unicode_digits_and_huge_numbers_in_retry_after_are_handled() -> None:
    assert parse_retry_after("²", NOW) is None
    assert parse_retry_after("9" * 5000, NOW) == NOW + 24 * 3600 * 1000
    assert parse_retry_after("0" * 20 + "30", NOW) == NOW + 30_000
