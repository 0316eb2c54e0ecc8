"""A checkpointed answer (steps that ran one after another in one request, then what ended
it) is read as its steps and their sequel; a lone step, or ops without leading steps, read
as every SDK's answers always have; an ending anywhere but last is refused, saying why."""

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from weir.platform.executor import answer_limits
from weir.platform.executor.response import (
    AttemptFailed,
    Checkpointed,
    Completed,
    Ops,
    RawResponse,
    classify,
)
from weir.platform.foundation import jsonvalues

SDK = {"x-inngest-sdk": "py:v0.5.19"}


def _op(op: str, name: str, **fields: Any) -> dict[str, Any]:
    return {"op": op, "id": f"id-{name}", "name": name, "displayName": name, **fields}


def _classify(ops: list[dict[str, Any]], headers: dict[str, str] | None = None) -> Any:
    return classify(RawResponse(206, SDK | (headers or {}), json.dumps(ops).encode()), 0)


def _run(name: str, data: Any = None) -> dict[str, Any]:
    return _op("StepRun", name, data=data)


def test_steps_then_nothing_are_steps_to_save_and_call_again() -> None:
    outcome = _classify([_run("a", 1), _run("b", 2)])
    assert isinstance(outcome, Checkpointed) and outcome.then is None
    assert [(s.id, s.data) for s in outcome.steps] == [("id-a", 1), ("id-b", 2)]


def test_run_complete_ends_the_run_with_its_data() -> None:
    outcome = _classify([_run("a", 1), _op("RunComplete", "complete", data={"ok": True})])
    assert isinstance(outcome, Checkpointed)
    assert outcome.then == Completed({"ok": True})


def test_run_error_is_the_attempt_s_error_with_the_answer_s_retry_headers() -> None:
    error = {"name": "NonRetriableError", "message": "stop", "stack": "Traceback", "extra": 5}
    ops = [_run("a", 1), _op("RunError", "error", error=error)]
    outcome = _classify(ops, {"x-inngest-no-retry": "true"})
    assert isinstance(outcome, Checkpointed)
    assert outcome.then == AttemptFailed(
        error,
        no_retry=True,  # as the SDK sent it, fields of its own too
    )


def test_a_run_error_without_an_error_object_still_says_what_happened() -> None:
    outcome = _classify([_run("a"), _op("RunError", "error", error="oops")])
    assert isinstance(outcome, Checkpointed) and isinstance(outcome.then, AttemptFailed)
    assert outcome.then.error["name"] == "Error"
    assert outcome.then.error["message"] == "the app reported an error without an error object"


def test_ops_after_the_steps_are_their_sequel() -> None:
    outcome = _classify([_run("a"), _op("Sleep", "nap", opts={"duration": "1s"})])
    assert isinstance(outcome, Checkpointed) and isinstance(outcome.then, Ops)
    assert [o.op for o in outcome.then.ops] == ["Sleep"]


@pytest.mark.parametrize(
    "ops",
    [
        [_run("a", 1)],
        [_op("StepPlanned", "p1"), _op("StepPlanned", "p2")],
        [_op("Sleep", "nap", opts={"duration": "1s"}), _run("a")],  # no leading step
    ],
)
def test_answers_every_sdk_sends_read_as_before(ops: list[dict[str, Any]]) -> None:
    outcome = _classify(ops)
    assert isinstance(outcome, Ops) and len(outcome.ops) == len(ops)


def test_run_complete_alone_completes_the_run() -> None:
    assert _classify([_op("RunComplete", "complete", data=7)]) == Completed(7)


@pytest.mark.parametrize(
    ("ops", "words"),
    [
        (
            [_op("RunComplete", "complete", data=1), _run("a")],
            "RunComplete or RunError may only be the last op of an answer",
        ),
        (
            [_run("a"), _op("Sleep", "nap", opts={"duration": "1s"}), _op("RunComplete", "c")],
            "RunComplete may follow only steps that ran, not Sleep",
        ),
    ],
)
def test_an_ending_out_of_place_fails_the_attempt_for_good(
    ops: list[dict[str, Any]], words: str
) -> None:
    outcome = _classify(ops)
    assert isinstance(outcome, AttemptFailed) and outcome.no_retry
    assert outcome.error["name"] == "InvalidOp"
    assert words in outcome.error["message"]


def test_a_return_value_weir_cannot_keep_fails_the_attempt_for_good() -> None:
    raw = b'[{"op":"StepRun","id":"a","data":1},{"op":"RunComplete","id":"c","data":1e400}]'
    outcome = classify(RawResponse(206, SDK, raw), 0)
    assert isinstance(outcome, AttemptFailed) and outcome.no_retry
    assert outcome.error["name"] == "InvalidOp" and "RunComplete" in outcome.error["message"]


def test_size_limits_count_every_step_and_the_return_value() -> None:
    big = "x" * (answer_limits.MAX_STEP_OUTPUT_BYTES + 1)
    too_big_step = _classify([_run("a", 1), _run("b", big)])
    assert answer_limits.enforce(too_big_step, 0).error["name"] == "StepOutputTooLarge"  # type: ignore[union-attr]
    too_big_output = _classify([_run("a", 1), _op("RunComplete", "c", data=big)])
    assert answer_limits.enforce(too_big_output, 0).error["name"] == "OutputTooLarge"  # type: ignore[union-attr]
    half = "x" * (answer_limits.MAX_STEP_OUTPUT_BYTES - 100)
    state = _classify([_run("a", half), _run("b", half)])
    near_full = answer_limits.MAX_RUN_STATE_BYTES - answer_limits.MAX_STEP_OUTPUT_BYTES
    assert answer_limits.enforce(state, near_full).error["name"] == "RunStateTooLarge"  # type: ignore[union-attr]
    fits = _classify([_run("a", 1), _run("b", 2)])
    assert answer_limits.enforce(fits, 0) is fits


def test_answers_are_measured_op_by_op_unless_far_within_every_limit() -> None:
    big = "x" * (answer_limits.MAX_STEP_OUTPUT_BYTES + 1)
    body = json.dumps([_run("a", 1), _run("b", big)]).encode()
    outcome = classify(RawResponse(206, SDK, body), 0)
    failed = answer_limits.enforce(outcome, 0, answer_bytes=len(body))
    assert isinstance(failed, AttemptFailed) and failed.error["name"] == "StepOutputTooLarge"
    small = json.dumps([_run("a", 1), _run("b", 2)]).encode()
    fits = classify(RawResponse(206, SDK, small), 0)
    assert answer_limits.enforce(fits, 0, answer_bytes=len(small)) is fits
    full = answer_limits.MAX_RUN_STATE_BYTES - 10  # a small answer to a full run is still measured
    refused = answer_limits.enforce(fits, full, answer_bytes=len(small))
    assert isinstance(refused, AttemptFailed) and refused.error["name"] == "RunStateTooLarge"


JSON_TEXT = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=10,
)


@given(JSON_TEXT, st.sampled_from(["%.0e", "%r", "%.17g"]))
def test_a_value_written_back_is_at_most_growth_times_its_answer_bytes(
    value: Any, number_style: str
) -> None:
    # the most compact text an app could send: raw UTF-8, no spaces, numbers as short as
    # they go (1e15 for 1000000000000000.0); what the store writes is the value re-encoded
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    sent = text.encode()
    read = jsonvalues.loads(sent)
    stored = json.dumps({"data": read, "error": None}, separators=(",", ":"))
    assert len(stored) <= len(sent) * answer_limits.GROWTH + answer_limits.WRAPPING
    for number in (1e15, 9e15, 1e-7, 123456789.0):
        short = (number_style % number).encode()
        stored = json.dumps({"data": jsonvalues.loads(short), "error": None})
        assert len(stored) <= len(short) * answer_limits.GROWTH + answer_limits.WRAPPING


def test_run_complete_reads_its_data_as_a_200_body_is_read() -> None:
    twice = [_run("a", 1), _op("RunComplete", "c", data='{"a": 1}')]
    outcome = _classify(twice)
    assert isinstance(outcome, Checkpointed) and outcome.then == Completed({"a": 1})
    assert _classify([_run("a", 1), _op("RunComplete", "c", data="{not json}")]).then == (
        Completed("{not json}")
    )
    hidden = [_run("a", 1), _op("RunComplete", "c", data='{"n": 1e400}')]
    refused = _classify(hidden).then
    assert isinstance(refused, AttemptFailed) and refused.no_retry
    assert refused.error["name"] == "InvalidOutput"
