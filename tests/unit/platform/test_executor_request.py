"""The invocation body: JCS-canonical, memos as stored, use_api above 4 MiB of state."""

import itertools
import json

import pytest
import rfc8785
from weir.platform.executor import canonical, request
from weir.platform.executor.request import (
    MAX_INLINE_BYTES,
    CallState,
    Canonical,
    build_body,
    step_url,
)
from weir.platform.foundation.vocabulary import RunStatus
from weir.platform.store.records.runs import Run
from weir.platform.store.records.steps import Step


def state(event_data: dict[str, object], memos: list[tuple[str, str]]) -> CallState:
    run = Run("run1", "fn", RunStatus.RUNNING, (), 0, 0, "lane", force_plan=False)
    steps = [Step("run1", s, i, s, "StepRun", json.loads(m), 0) for i, (s, m) in enumerate(memos)]
    return CallState(run=run, events=[{"name": "e", "data": event_data}], memos=steps)


def test_body_carries_events_steps_and_ctx() -> None:
    body = json.loads(
        build_body(
            state({"b": 1, "a": 2}, [("h1", '{"data":1}')]),
            fn_id="f",
            step_id="step",
            attempt=2,
            max_attempts=5,
        )
    )
    assert body["steps"] == {"h1": {"data": 1}}
    assert body["ctx"]["attempt"] == 2
    assert body["ctx"]["max_attempts"] == 5
    assert body["ctx"]["stack"] == {"stack": ["h1"], "current": 1}
    assert body["use_api"] is False


def test_body_is_canonical_json() -> None:
    raw = build_body(
        state({"b": 1, "a": 2}, []), fn_id="f", step_id="step", attempt=0, max_attempts=1
    )
    assert b'"data":{"a":2,"b":1}' in raw
    assert b" " not in raw


def test_large_state_switches_to_use_api() -> None:
    big = '{"data":"' + "x" * MAX_INLINE_BYTES + '"}'
    body = json.loads(
        build_body(state({}, [("h1", big)]), fn_id="f", step_id="step", attempt=0, max_attempts=1)
    )
    assert body["use_api"] is True
    assert body["ctx"]["use_api"] is True
    assert body["steps"] == {}
    assert body["events"] == []


def test_a_memo_holding_the_body_s_own_marker_is_refused_not_spliced(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(request, "_MARKER_COUNT", itertools.count(7))
    marker = f"{request._MARKER_SECRET}:7:0"  # the first event's marker in the next body
    memo = json.dumps({"data": marker})
    with pytest.raises(RuntimeError, match="marker occurs in the request's data"):
        build_body(
            state({"a": 1}, [("h1", memo)]), fn_id="f", step_id="s", attempt=0, max_attempts=1
        )


def test_an_earlier_body_s_marker_is_only_data(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(request, "_MARKER_COUNT", itertools.count(7))
    build_body(state({"a": 1}, []), fn_id="f", step_id="s", attempt=0, max_attempts=1)
    old = f"{request._MARKER_SECRET}:7:0"
    memo = json.dumps({"data": old})
    raw = build_body(
        state({"a": 1}, [("h1", memo)]), fn_id="f", step_id="s", attempt=0, max_attempts=1
    )
    body = json.loads(raw)
    assert body["steps"] == {"h1": {"data": old}}
    assert body["event"] == body["events"][0] == {"name": "e", "data": {"a": 1}}


def test_events_spliced_or_serialized_give_the_body_of_plain_events() -> None:
    plain = [{"name": f"e{i}", "data": {"i": i, "s": "é\n"}} for i in range(5)]
    mixed = [plain[0], Canonical(canonical.dumps(plain[1])), *plain[2:4]]
    mixed.append(Canonical(canonical.dumps(plain[4])))
    run = state({}, []).run
    built = [
        build_body(CallState(run, events, []), fn_id="f", step_id="s", attempt=0, max_attempts=1)
        for events in (plain, mixed)
    ]
    expected = json.loads(built[0])
    assert expected["event"] == plain[0] and expected["events"] == plain
    assert built[1] == built[0] == canonical.dumps(expected)


def test_a_later_event_the_fast_path_cannot_write_still_gives_canonical_bytes() -> None:
    # 10.0 is written "10" by RFC 8785 and "10.0" by orjson: that body takes the slow path,
    # each event made canonical on its own; a memo needing it too keeps the body inline.
    plain = [{"name": "e", "data": {"i": i}} for i in range(3)]
    plain[2]["data"] = {"whole": 10.0, "ключ": 1}
    memos = state({}, [("h1", '{"data":12.0}')]).memos
    called = CallState(state({}, []).run, list(plain), memos)
    raw = build_body(called, fn_id="f", step_id="s", attempt=0, max_attempts=1)
    body = json.loads(raw)
    assert body["use_api"] is False
    assert body["events"] == plain and body["steps"] == {"h1": {"data": 12}}
    assert raw == bytes(rfc8785.dumps(body))
    assert b'"whole":10,' in raw and b'"data":12}' in raw


def test_step_url_replaces_only_the_step_id() -> None:
    url = "http://h:1/api/inngest?fnId=app-f&stepId=step"
    assert step_url(url, "abc") == "http://h:1/api/inngest?fnId=app-f&stepId=abc"


def test_step_url_adds_a_missing_step_id_and_keeps_the_other_parameters() -> None:
    url = "http://h:1/api/inngest?fnId=app-f&weir=%7B%7D"
    assert step_url(url, "s1") == "http://h:1/api/inngest?fnId=app-f&weir=%7B%7D&stepId=s1"
    # memoized per (url, step id): each step id still gets its own URL
    assert step_url(url, "s2") == "http://h:1/api/inngest?fnId=app-f&weir=%7B%7D&stepId=s2"
    assert step_url(url, "s1") == "http://h:1/api/inngest?fnId=app-f&weir=%7B%7D&stepId=s1"
