"""Event validation: every bad input gets a clear EventError, good input is normalised."""

import json
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from weir.platform.ingest.validate import (
    MAX_EVENT_BYTES,
    MAX_EVENTS,
    TS_AHEAD_MS,
    TS_MAX,
    TS_MIN,
    EventError,
    IncomingEvent,
    event_payload,
    parse_body,
)

NOW = 1_700_000_000_000


def parse(value: Any, *, internal: bool = False) -> list[IncomingEvent]:
    return parse_body(json.dumps(value).encode(), NOW, internal=internal)


def one(value: dict[str, Any], **kw: Any) -> IncomingEvent:
    [event] = parse(value, **kw)
    return event


def rejected(body: Any) -> str:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    with pytest.raises(EventError) as info:
        parse_body(raw, NOW)
    return str(info.value)


# -- bad input -------------------------------------------------------------------------------


@pytest.mark.parametrize("body", [b"", b"{", b'{"name": "a",}', b"nope", b"\xff\xfe", b"[1,]"])
def test_a_body_that_is_not_json_is_rejected(body: bytes) -> None:
    assert "not valid JSON" in rejected(body)


@pytest.mark.parametrize(
    ("event", "shown"),
    [
        ({}, "None"),
        ({"data": {}}, "None"),
        ({"name": None}, "None"),
        ({"name": 42}, "42"),
        ({"name": ["a"]}, "['a']"),
        ({"name": ""}, "''"),
        ({"name": "   "}, "'   '"),
    ],
)
def test_a_missing_or_non_string_name_is_rejected(event: dict[str, Any], shown: str) -> None:
    assert rejected(event) == f"event 0: 'name' must be a non-empty string, got {shown}"


def test_a_name_longer_than_512_characters_is_rejected() -> None:
    assert one({"name": "n" * 512}).name == "n" * 512
    assert "'name' is 513 characters; at most 512" in rejected({"name": "n" * 513})


@pytest.mark.parametrize("name", ["inngest/function.finished", "inngest/x", "Inngest/X"])
def test_names_under_the_reserved_prefix_are_rejected(name: str) -> None:
    message = rejected({"name": name})
    assert "reserved" in message and "'inngest/'" in message and repr(name) in message


def test_weir_itself_may_send_reserved_names() -> None:
    assert one({"name": "inngest/function.failed"}, internal=True).name == (
        "inngest/function.failed"
    )


@pytest.mark.parametrize(
    ("data", "kind"), [([], "list"), ("x", "str"), (1, "int"), (True, "bool"), (1.5, "float")]
)
def test_data_that_is_not_an_object_is_rejected(data: Any, kind: str) -> None:
    assert rejected({"name": "a", "data": data}) == (
        f"event 0: 'data' must be a JSON object, got {kind}"
    )


@pytest.mark.parametrize(
    "ts",
    [
        TS_MIN - 1,
        TS_AHEAD_MS,
        TS_MAX,
        TS_MAX + 1,
        -1,
        1_700_000_000,  # seconds, not milliseconds: 1970
        10**18,
        1e300,
    ],
)
def test_a_ts_outside_1980_to_2100_is_rejected(ts: float) -> None:
    assert "is outside the years 1980 to 2100 (Unix milliseconds)" in rejected(
        {"name": "a", "ts": ts}
    )


def test_ts_bounds_are_1980_inclusive_and_2100_exclusive() -> None:
    assert one({"name": "a", "ts": TS_MIN}).ts == TS_MIN
    late = TS_MAX - 1  # 2100 is within 366 days of a clock at the end of 2099
    assert parse_body(json.dumps({"name": "a", "ts": late}).encode(), late)[0].ts == late


def test_a_ts_at_most_366_days_ahead_is_taken_and_further_is_refused() -> None:
    assert one({"name": "a", "ts": NOW + TS_AHEAD_MS}).ts == NOW + TS_AHEAD_MS
    refused = rejected({"name": "a", "ts": NOW + TS_AHEAD_MS + 1})
    assert "lies more than 366 days ahead" in refused


@pytest.mark.parametrize("ts", [1_700_000_000_000.5, 0.5, "1700000000000", True, [1], {"ms": 1}])
def test_a_ts_that_is_not_a_whole_number_is_rejected(ts: Any) -> None:
    assert "'ts' must be an integer of Unix milliseconds" in rejected({"name": "a", "ts": ts})


def test_a_whole_float_ts_is_taken_as_integer_milliseconds() -> None:
    event = one({"name": "a", "ts": 1.7e12})
    assert event.ts == 1_700_000_000_000
    assert type(event.ts) is int


def test_an_event_over_3_mib_is_rejected_and_one_at_the_limit_is_not() -> None:
    def event_of(size: int) -> dict[str, Any]:
        event: dict[str, Any] = {"name": "a", "data": {"s": ""}}
        event["data"]["s"] = "x" * (size - len(orjson.dumps(event)))
        assert len(orjson.dumps(event)) == size
        return event

    assert one(event_of(MAX_EVENT_BYTES)).name == "a"
    message = rejected([{"name": "small"}, event_of(MAX_EVENT_BYTES + 1)])
    assert message == (
        f"event 1: is {MAX_EVENT_BYTES + 1} bytes; an event may be at most "
        f"{MAX_EVENT_BYTES} bytes (3 MiB)"
    )


def test_the_size_limit_counts_utf8_bytes_not_characters() -> None:
    chars = MAX_EVENT_BYTES // 2  # two bytes each in UTF-8
    assert "bytes (3 MiB)" in rejected({"name": "a", "data": {"s": "é" * chars}})


def test_more_than_5000_events_are_rejected_whole() -> None:
    assert len(parse([{"name": "a"}] * MAX_EVENTS)) == MAX_EVENTS
    assert rejected([{"name": "a"}] * (MAX_EVENTS + 1)) == (
        f"{MAX_EVENTS + 1} events in one request; at most {MAX_EVENTS} are allowed"
    )


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("id", 5, "'id' must be a string, got int"),
        ("v", {"x": 1}, "'v' must be a string, got dict"),
        ("user", [], "'user' must be a JSON object, got list"),
        ("user", "me", "'user' must be a JSON object, got str"),
    ],
)
def test_optional_fields_of_the_wrong_type_are_rejected(
    field: str, value: Any, expected: str
) -> None:
    assert rejected({"name": "a", field: value}) == f"event 0: {expected}"


@pytest.mark.parametrize("item", [1, "a", None, [], [{"name": "a"}]])
def test_an_array_item_that_is_not_an_object_is_rejected(item: Any) -> None:
    message = rejected([{"name": "ok"}, item])
    assert message.startswith("event 1: must be a JSON object with a 'name', got ")


def test_one_bad_event_rejects_the_whole_request_and_names_it() -> None:
    events = [{"name": "ok"}] * 3 + [{"name": "bad", "data": []}] + [{"name": "ok"}]
    assert rejected(events).startswith("event 3: 'data' must be a JSON object")


def test_a_bare_non_object_body_is_rejected() -> None:
    assert rejected("app/x") == "event 0: must be a JSON object with a 'name', got str"
    assert rejected(None) == "event 0: must be a JSON object with a 'name', got NoneType"


# -- good input, normalised ------------------------------------------------------------------


def test_a_single_object_is_one_event_with_defaults_filled_in() -> None:
    assert parse({"name": "app/user.created"}) == [
        IncomingEvent(name="app/user.created", data={}, user_id=None, ts=NOW, user={}, v=None)
    ]


def test_every_field_is_kept_as_sent() -> None:
    event = one(
        {
            "name": "app/order",
            "data": {"n": 1, "nested": {"a": [1, 2]}},
            "id": "order-1",
            "ts": 1_600_000_000_000,
            "user": {"email": "a@b.c"},
            "v": "2024-01-01.1",
        }
    )
    assert event == IncomingEvent(
        name="app/order",
        data={"n": 1, "nested": {"a": [1, 2]}},
        user_id="order-1",
        ts=1_600_000_000_000,
        user={"email": "a@b.c"},
        v="2024-01-01.1",
    )


@pytest.mark.parametrize("ts", [None, 0, 0.0])
def test_a_missing_or_zero_ts_means_now(ts: Any) -> None:
    assert one({"name": "a", "ts": ts}).ts == NOW


def test_null_data_and_user_become_empty_objects_and_empty_strings_become_unset() -> None:
    event = one({"name": "a", "data": None, "user": None, "id": "", "v": ""})
    assert (event.data, event.user, event.user_id, event.v) == ({}, {}, None, None)


def test_the_reserved_inngest_data_key_is_dropped_from_user_events() -> None:
    sent = {"name": "a", "data": {"_inngest": {"fake": True}, "keep": 1}}
    assert one(sent).data == {"keep": 1}
    assert one(sent, internal=True).data == {"_inngest": {"fake": True}, "keep": 1}


def test_an_array_keeps_its_order_and_an_empty_array_is_no_events() -> None:
    assert [e.name for e in parse([{"name": "a"}, {"name": "b"}, {"name": "c"}])] == [
        "a",
        "b",
        "c",
    ]
    assert parse([]) == []


def test_unknown_fields_are_ignored() -> None:
    assert one({"name": "a", "extra": {"x": 1}}).name == "a"


def test_the_payload_the_sdk_sees_uses_the_sender_s_id_or_else_the_internal_one() -> None:
    sent = one({"name": "a", "data": {"x": 1}, "id": "mine", "ts": TS_MIN, "v": "1"})
    assert event_payload(sent, "01INTERNAL") == {
        "name": "a",
        "data": {"x": 1},
        "id": "mine",
        "ts": TS_MIN,
        "user": {},
        "v": "1",
    }
    bare = one({"name": "a"})
    assert event_payload(bare, "01INTERNAL") == {
        "name": "a",
        "data": {},
        "id": "01INTERNAL",
        "ts": NOW,
        "user": {},
    }


# -- any input at all ------------------------------------------------------------------------

_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
_JSON = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=12,
)
_FIELD_VALUES = (
    _JSON
    | st.sampled_from(["app/x", "inngest/x", "", "a" * 513])
    | st.integers(TS_MIN - 10, TS_MAX + 10)
)
_EVENT_LIKE = st.dictionaries(
    st.sampled_from(["name", "data", "id", "ts", "user", "v", "other"]), _FIELD_VALUES
)
_BODIES = _JSON | _EVENT_LIKE | st.lists(_EVENT_LIKE | _JSON, max_size=4)


def outcome(body: bytes) -> list[IncomingEvent] | EventError:
    try:
        return parse_body(body, NOW)
    except EventError as error:
        failure = error
    assert str(failure), "an EventError must say what was wrong"
    return failure


def check_normalised(events: list[IncomingEvent]) -> None:
    for e in events:
        assert isinstance(e.name, str) and e.name.strip() and len(e.name) <= 512
        assert not e.name.lower().startswith("inngest/")
        assert isinstance(e.data, dict) and "_inngest" not in e.data
        assert isinstance(e.user, dict)
        assert type(e.ts) is int and (e.ts == NOW or TS_MIN <= e.ts <= NOW + TS_AHEAD_MS)
        assert e.user_id is None or (isinstance(e.user_id, str) and e.user_id)
        assert e.v is None or (isinstance(e.v, str) and e.v)


@settings(max_examples=300, deadline=None)
@given(_BODIES)
def test_any_json_value_parses_or_raises_event_error(value: Any) -> None:
    result = outcome(json.dumps(value).encode())
    if isinstance(result, list):
        check_normalised(result)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=64))
def test_any_bytes_parse_or_raise_event_error(body: bytes) -> None:
    result = outcome(body)
    if isinstance(result, list):
        check_normalised(result)


@pytest.mark.parametrize("depth", [10, 200, 255, 300, 1000])
def test_deeply_nested_data_parses_or_raises_event_error(depth: int) -> None:
    # orjson reads up to 1024 levels but writes at most 254, and validation re-encodes the
    # event to measure it: nesting between the two must still give an EventError, not a 500.
    body = b'{"name":"a","data":{"d":' + b"[" * depth + b"]" * depth + b"}}"
    outcome(body)


@pytest.mark.parametrize("ts", [False, True])
def test_a_boolean_ts_is_rejected_not_taken_as_now(ts: bool) -> None:
    # False == 0 in Python, and 0 means "now": found by the schemathesis fuzz test
    assert "'ts' must be an integer" in rejected({"name": "a", "ts": ts})


@settings(max_examples=200, deadline=None)
@given(_BODIES)
def test_every_accepted_event_can_be_stored_and_sent(value: Any) -> None:
    result = outcome(json.dumps(value).encode())
    if isinstance(result, list):
        for i, event in enumerate(result):
            assert orjson.loads(orjson.dumps(event_payload(event, f"id{i}")))["name"] == event.name


@pytest.mark.parametrize("number", ["1e20", "9007199254740992.0", "-1.5e19"])
def test_a_whole_number_no_sdk_reads_back_exactly_is_rejected_with_its_path(number: str) -> None:
    body = b'{"name": "a", "data": {"amounts": [1, ' + number.encode() + b"]}}"
    found = rejected(body)
    assert found.startswith("event 0: data.amounts[1] is ")
    assert "send larger or exact values as strings" in found


def test_numbers_that_canonical_json_carries_exactly_are_kept() -> None:
    event = one({"name": "a", "data": {"n": [1e21, 0.5, 2**53 - 1, -2.5e15], "s": "1e+17"}})
    assert event.data == {"n": [1e21, 0.5, 2**53 - 1, -2.5e15], "s": "1e+17"}
