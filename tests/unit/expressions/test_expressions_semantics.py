"""What evaluation means: the CEL semantics Weir relies on, pinned against the real evaluator."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from weir.expressions import EvaluationError, compile_expression

WAIT_VARIABLES = ("event", "async")


def make_event(**data: Any) -> dict[str, Any]:
    return {
        "name": "billing/invoice.paid",
        "id": "01HQ",
        "ts": 1_700_000_000_000,
        "user": {},
        "v": "1",
        "data": data,
    }


def evaluate(source: str, event: dict[str, Any], **more: Any) -> Any:
    variables = ("event", *more)
    return compile_expression(source, variables).evaluate({"event": event, **more})


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("event.data.n > 100.0", True),  # int field against a double literal
        ("event.data.n == 150.0", True),
        ("event.data.n < 150.5", True),
        ("42 == 42.0", True),
        ("event.data.n == event.data.f", False),  # 150 vs 42.0
        ("event.data.f == 42", True),  # a JS SDK sends 42 as 42.0
        ("event.data.f > 41", True),
    ],
)
def test_int_and_double_compare_by_value(source: str, expected: bool) -> None:
    assert evaluate(source, make_event(n=150, f=42.0)) is expected


def test_results_are_plain_python_values() -> None:
    event = make_event(accountId="acc_42", region="eu", plan="enterprise", items=[1, 2])
    assert evaluate("event.data.accountId", event) == "acc_42"
    assert evaluate('event.data.accountId + "-" + event.data.region', event) == "acc_42-eu"
    assert evaluate("event.data.plan == 'enterprise' ? 120 : 0", event) == 120
    assert evaluate("event.data.items", event) == [1, 2]
    assert evaluate("event.data", event) == event["data"]
    assert evaluate("null", event) is None
    assert evaluate("string(42.0)", event) == "42"


def test_timestamps_and_durations_come_back_as_datetime_and_timedelta() -> None:
    event = make_event()
    assert evaluate('timestamp("2024-01-02T03:04:05Z")', event) == datetime(
        2024, 1, 2, 3, 4, 5, tzinfo=UTC
    )
    assert evaluate('duration("90s")', event) == timedelta(seconds=90)


def test_a_missing_field_is_an_evaluation_error_naming_it() -> None:
    expression = compile_expression("event.data.missing == 'x'")
    with pytest.raises(EvaluationError, match="missing") as caught:
        expression.evaluate({"event": make_event()})
    assert caught.value.source == "event.data.missing == 'x'"


def test_matches_is_false_when_evaluation_fails() -> None:
    assert compile_expression("event.data.missing == 'x'").matches({"event": make_event()}) is False


def test_an_error_on_one_side_of_or_is_absorbed_when_the_other_is_true() -> None:
    assert evaluate("event.data.missing == 'x' || true", make_event()) is True


def test_matches_is_true_only_for_exactly_true() -> None:
    activation = {"event": make_event(n=1, s="yes", items=[1])}
    assert compile_expression("event.data.n == 1").matches(activation) is True
    assert compile_expression("event.data.n").matches(activation) is False  # 1 is not true
    assert compile_expression("event.data.s").matches(activation) is False
    assert compile_expression("event.data.items").matches(activation) is False
    assert compile_expression("event.data.n == 2").matches(activation) is False


def test_has_tests_presence_of_the_last_field() -> None:
    event = make_event(x=None, nested={"y": 1})
    assert evaluate("has(event.data.x)", event) is True  # present, even if null
    assert evaluate("has(event.data.absent)", event) is False
    assert evaluate("has(event.data.nested.y)", event) is True
    assert evaluate("has(event.data.nested.z)", event) is False


def test_has_on_a_missing_parent_is_an_error() -> None:
    # Strict CEL: has() tests only the last selection; its operand must evaluate.
    with pytest.raises(EvaluationError):
        evaluate("has(event.data.absent.deeper)", make_event())


def test_string_functions() -> None:
    event = make_event(email="Ana@Example.com")
    assert evaluate('event.name.startsWith("billing/")', event) is True
    assert evaluate('event.name.endsWith(".paid")', event) is True
    assert evaluate('event.data.email.contains("@")', event) is True
    assert evaluate('event.data.email.matches("^[A-Z][a-z]+@")', event) is True
    assert evaluate("size(event.name)", event) == len("billing/invoice.paid")


def test_the_async_variable_is_the_incoming_event_of_a_wait() -> None:
    expression = compile_expression("async.data.accountId == event.data.accountId", WAIT_VARIABLES)
    waiting = make_event(accountId="acc_1")
    assert expression.matches({"event": waiting, "async": make_event(accountId="acc_1")})
    assert not expression.matches({"event": waiting, "async": make_event(accountId="acc_2")})


def test_a_referenced_variable_missing_from_the_activation_is_an_evaluation_error() -> None:
    expression = compile_expression("async.data.x == 1", WAIT_VARIABLES)
    with pytest.raises(EvaluationError):
        expression.evaluate({"event": make_event()})


def test_an_integer_above_2_63_elsewhere_in_the_payload_does_not_break_evaluation() -> None:
    event = make_event(accountId="acc_1", huge=2**70, nested={"huger": -(2**80)})
    assert evaluate('event.data.accountId == "acc_1"', event) is True


def test_an_integer_beyond_64_bits_that_is_read_becomes_a_double() -> None:
    # The evaluator's conversion is lossy here (uint64 still fits); pinned so a change shows.
    assert evaluate("event.data.huge", make_event(huge=2**63)) == 2**63
    result = evaluate("event.data.huge", make_event(huge=2**70))
    assert isinstance(result, float)
    assert result == float(2**70)


def test_comprehensions_over_event_data() -> None:
    event = make_event(items=[{"sku": "a", "qty": 2}, {"sku": "b", "qty": 5}])
    assert evaluate('event.data.items.exists(i, i.sku == "b")', event) is True
    assert evaluate("event.data.items.all(i, i.qty > 1)", event) is True
    assert evaluate("event.data.items.exists_one(i, i.qty > 3)", event) is True
    assert evaluate("event.data.items.map(i, i.qty)", event) == [2, 5]
    assert evaluate("event.data.items.filter(i, i.qty > 3).map(i, i.sku)", event) == ["b"]


def test_a_loop_variable_may_shadow_event_inside_its_comprehension() -> None:
    event = make_event(items=[5, 6])
    assert evaluate("event.data.items.exists(event, event == 6)", event) is True


def test_indexing_and_runtime_type_errors_are_evaluation_errors() -> None:
    event = make_event(items=[1], name="x")
    for source in ("event.data.items[9]", "event.data.name + 1", "1 / 0", 'event.data["nope"]'):
        with pytest.raises(EvaluationError):
            evaluate(source, event)


def test_an_index_or_method_keeps_the_whole_sub_object() -> None:
    event = make_event(tags={"a-b": "x"}, items=[{"id": 1}, {"id": 2}])
    assert evaluate('event.data.tags["a-b"]', event) == "x"
    assert evaluate("event.data.items[1].id", event) == 2
    assert evaluate('"a-b" in event.data.tags', event) is True


def test_type_names_may_be_used() -> None:
    assert evaluate("type(event.data.n) == int", make_event(n=1)) is True


def test_the_activation_is_not_modified() -> None:
    event = make_event(a={"b": 1, "c": 2}, d=3)
    snapshot = repr(event)
    evaluate("event.data.a.b == 1 && has(event.data.x)", event)
    assert repr(event) == snapshot
