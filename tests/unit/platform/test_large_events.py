"""Large events (parsed in a worker process, kept as bytes) against the same events taken the
small way: the same stored bytes, the same values for expressions, the same request body."""

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
import rfc8785
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from weir.expressions import (
    Budget,
    Document,
    EvaluationError,
    compile_expression,
    configure_budget,
    current_budget,
)
from weir.expressions._pool import POOL
from weir.platform.executor.request import (
    MAX_INLINE_BYTES,
    CallState,
    Canonical,
    Unparsed,
    build_body,
)
from weir.platform.foundation.vocabulary import RunStatus
from weir.platform.ingest import workers as ingest_workers
from weir.platform.ingest.validate import (
    LARGE_EVENT_BYTES,
    EventError,
    event_payload,
    parse_body,
    parse_large_body,
)
from weir.platform.store.records.events import payload_text
from weir.platform.store.records.runs import Run
from weir.platform.store.records.steps import Step

NOW = 1_700_000_000_000
PAD = "p" * LARGE_EVENT_BYTES  # makes any event large
TRICKY: dict[str, Any] = {
    "kind": "a",
    "float": 2.0,
    "floats": [9e15, 1.5e-7, -0.0, 0.1, 1e21, 1234567890123456800000.0],
    "ints": [0, -1, 2**53 - 1, -(2**53 - 1)],
    "text": 'é\u2028\x01\x7f😀"\\',
    "keys": {"\ue000": 1, "😀": 2, "a": 3, "B": 4},  # canonical order is by UTF-16 units
    "nested": {"deep": [[{"x": None, "t": True, "f": False}]]},
}


def _kept(number: float) -> bool:
    """Not a whole number canonical JSON sends as digits past 2^53 (refused at ingest)."""
    return not 2**53 <= abs(number) < 1e21


printable = st.text(alphabet=st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp")))
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**53 - 1), 2**53 - 1)
    | st.floats(allow_nan=False, allow_infinity=False).filter(_kept)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)


@pytest.fixture(autouse=True)
def roomy_budget() -> Iterator[None]:
    """These tests compare results: on a loaded machine a worker may take long to answer, and
    an evaluation over its budget would have none."""
    previous = configure_budget(Budget(time_ms=10_000))
    yield
    configure_budget(previous)


def _both(event: dict[str, Any], event_id: str = "evt-1") -> tuple[dict[str, Any], dict[str, Any]]:
    """The stored payload of `event` taken the small way, and the large way."""
    body = json.dumps(event).encode()
    [small] = parse_body(body, NOW)
    [large] = parse_large_body(body, NOW)
    assert small.raw is None and large.raw is not None
    return event_payload(small, event_id), event_payload(large, event_id)


@settings(max_examples=150, deadline=None)
@given(data=st.dictionaries(st.text(max_size=8), json_values, max_size=6), v=st.none() | printable)
def test_a_large_event_stores_the_bytes_of_the_same_event_taken_small(
    data: dict[str, Any], v: str | None
) -> None:
    event = {"name": "t/big", "data": {**data, "pad": PAD}, "user": {"u": data}}
    if v:
        event["v"] = v
    small, large = _both(event)
    assert isinstance(large, Document) and not isinstance(small, Document)
    assert payload_text(large) == payload_text(small)
    assert large == small  # as a dict too: parsed from those bytes where a field is read
    assert json.loads(payload_text(large)) == small


def test_a_document_answers_its_small_fields_without_parsing() -> None:
    small, large = _both({"name": "t/big", "data": {"pad": PAD}, "id": "mine", "ts": NOW - 5})
    assert isinstance(large, Document)
    assert (large["name"], large["id"], large["ts"]) == ("t/big", "mine", NOW - 5)
    assert list(large) == list(small) and "data" in large and "v" not in large
    assert large.get("v") is None and large.knows("name") and not large.knows("data")
    assert dict.__len__(large) == 3  # nothing parsed: data and user are still bytes
    assert large["data"] == small["data"]  # reading one parses it here, once
    assert large.knows("data")


EXPRESSIONS = [
    'event.data.kind == "a"',
    "event.data.float == 2.0",
    "type(event.data.float) == double",
    "event.data.floats[0] > 1e15",
    "event.data.ints[2] + 1",
    'event.data.text.startsWith("é")',
    'event.data.keys["😀"]',
    "event.data.nested.deep[0][0].t",
    "has(event.data.nothing)",
    "event.data.nothing == 1",  # an error: no such key, as for the small event
    'event.name + "/" + event.id',
    "event.ts",
    "event.data.size()",
    "event.user.u.kind",
]


@pytest.mark.parametrize("source", EXPRESSIONS)
def test_expressions_see_the_same_values_in_a_large_event(source: str) -> None:
    assert POOL.wait_until_ready(current_budget())
    small, large = _both({"name": "t/big", "data": {**TRICKY, "pad": PAD}, "user": {"u": TRICKY}})
    expression = compile_expression(source)
    assert _result(expression, small) == _result(expression, large)
    assert isinstance(large, Document) and dict.__len__(large) == 3  # never parsed here


def _result(expression: Any, event: dict[str, Any]) -> Any:
    try:
        return ("ok", expression.evaluate({"event": event}))
    except EvaluationError as error:
        return ("error", error.reason)


def test_two_documents_in_one_activation_each_reach_the_worker() -> None:
    assert POOL.wait_until_ready(current_budget())
    first = _both({"name": "t/a", "data": {"kind": "a", "pad": PAD}}, "evt-a")
    second = _both({"name": "t/b", "data": {"kind": "b", "pad": PAD}}, "evt-b")
    large = {"event": first[1], "async": second[1]}
    small = {"event": first[0], "async": second[0]}
    source = "event.data.kind + async.data.kind + string(size(async.data.pad))"
    expression = compile_expression(source, ("event", "async"))
    assert expression.evaluate(large) == expression.evaluate(small) == f"ab{len(PAD)}"


def _state(events: list[Any], memos: dict[str, Any]) -> CallState:
    run = Run("run1", "fn", RunStatus.RUNNING, (), 0, 0, "lane", force_plan=False)
    steps = [Step("run1", s, i, s, "StepRun", m, 0) for i, (s, m) in enumerate(memos.items())]
    return CallState(run=run, events=events, memos=steps)


def _body(state: CallState) -> bytes:
    return build_body(state, fn_id="f", step_id="step", attempt=1, max_attempts=3)


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    datas=st.lists(st.dictionaries(st.text(max_size=8), json_values, max_size=5), max_size=3),
    memo=json_values,
)
def test_a_spliced_canonical_event_gives_the_same_request_body(
    datas: list[dict[str, Any]], memo: Any
) -> None:
    events = [{"name": "e", "data": d, "id": f"i{n}", "ts": 1} for n, d in enumerate(datas)]
    spliced = [Canonical(bytes(rfc8785.dumps(e))) for e in events]
    memos = {"s1": memo}
    assert _body(_state(spliced, memos)) == _body(_state(events, memos))


def test_a_large_event_is_made_canonical_in_a_worker_and_spliced() -> None:
    _, large = _both({"name": "t/big", "data": {**TRICKY, "pad": PAD}})
    assert isinstance(large, Document)
    stored = payload_text(large).encode()
    canonical = asyncio.run(ingest_workers.canonical(stored))
    assert canonical == bytes(rfc8785.dumps(json.loads(stored)))
    event = json.loads(stored)
    memos = {"s1": {"data": [1, 2.5]}}
    assert _body(_state([Canonical(canonical)], memos)) == _body(_state([event], memos))


def test_a_request_above_the_inline_limit_splices_the_event_once() -> None:
    event = {"name": "e", "data": {"x": "y" * (MAX_INLINE_BYTES // 2 + 1)}}
    canonical = Canonical(bytes(rfc8785.dumps(event)))
    body = _body(_state([canonical], {}))
    assert body == _body(_state([event], {}))
    assert json.loads(body)["use_api"] is True and json.loads(body)["events"] == []


def test_an_event_not_yet_canonical_is_never_sent() -> None:
    with pytest.raises(TypeError, match="canonical"):
        _body(_state([Unparsed(b'{"name":"e"}')], {}))


def test_a_stored_event_canonical_json_cannot_carry_is_refused_by_the_worker() -> None:
    with pytest.raises(ingest_workers.Unsendable):
        asyncio.run(ingest_workers.canonical(b'{"name":"e","data":{"n":9007199254740993}}'))


BAD = [
    ({"name": "t/x", "data": {"n": 2**53}}, "data.n is 9007199254740992"),
    ({"name": "t/x", "data": {"n": float("nan")}}, "data.n is NaN"),
    ({"name": "t/x\n", "data": {}}, "control character"),
    ({"name": "inngest/x", "data": {}}, "is reserved"),
    ({"name": "t/x", "data": [1]}, "'data' must be a JSON object"),
    ({"name": "t/x", "ts": 12}, "outside the years 1980 to 2100"),
    ({"name": "", "data": {}}, "'name' must be a non-empty string"),
    ({"name": "t/x", "data": {"s": "x" * (3 * 1024 * 1024)}}, "an event may be at most"),
]


@pytest.mark.parametrize(("event", "expected"), BAD)
def test_a_large_body_is_refused_with_the_same_error(event: dict[str, Any], expected: str) -> None:
    body = json.dumps([{"name": "t/ok", "data": {"pad": PAD}}, event]).encode()
    with pytest.raises(EventError) as small:
        parse_body(body, NOW)
    with pytest.raises(EventError) as large:
        asyncio.run(ingest_workers.parse(body, NOW))
    assert str(large.value) == str(small.value)
    assert str(large.value).startswith("event 1: ") and expected in str(large.value)


def test_bad_json_and_deep_nesting_get_the_same_error_from_a_worker() -> None:
    for body in (b"{" + PAD.encode(), b"[" * 100_000 + b"]" * 100_000):
        with pytest.raises(EventError) as small:
            parse_body(body, NOW)
        with pytest.raises(EventError) as large:
            asyncio.run(ingest_workers.parse(body, NOW))
        assert str(large.value) == str(small.value)


def test_the_worker_returns_small_events_of_a_large_body_as_values() -> None:
    body = orjson.dumps(
        [{"name": "t/small", "data": {"a": 1}}, {"name": "t/big", "data": {"p": PAD}}]
    )
    small, large = asyncio.run(ingest_workers.parse(body, NOW))
    assert small.raw is None and small.data == {"a": 1}
    assert large.raw is not None and large.data == {}
