"""Shared helpers: wall-clock text, bounds errors, JSON round trips."""

from __future__ import annotations

import dataclasses

import pytest
from weir.platform.gates import decisions, fifo_lane
from weir.platform.gates.debounce import DebounceState

NOON = 1_767_268_800_000  # 2026-01-01T12:00:00Z


@pytest.mark.parametrize(
    ("ms", "text"),
    [(NOON + 3_300, "12:00:03.300"), (0, "00:00:00.000"), (NOON - 1, "11:59:59.999")],
)
def test_clock_text(ms: int, text: str) -> None:
    assert decisions.clock_text(ms) == text


def test_wait_until_words() -> None:
    reason = decisions.wait_until("throttle", "", NOON + 3_300, "waiting for a slot")
    assert reason == decisions.WaitReason(
        "throttle", "", NOON + 3_300, "throttle: waiting for a slot until 12:00:03.300"
    )


@pytest.mark.parametrize(
    ("value", "low", "high", "message"),
    [
        (5, 10, None, "x = 5 is out of range; allowed: >= 10"),
        (50, 10, 20, "x = 50 is out of range; allowed: 10..20"),
        (True, 0, None, "x must be an integer, got True"),
        ("3", 0, None, "x must be an integer, got '3'"),
    ],
)
def test_require_range_messages(value: object, low: int, high: int | None, message: str) -> None:
    with pytest.raises(ValueError) as info:
        decisions.require_range("x", value, low, high)  # type: ignore[arg-type]
    assert str(info.value) == message


def test_json_round_trip_ignores_unknown_fields() -> None:
    state = DebounceState(1, NOON, NOON + 5, "e", NOON, 1)
    data = decisions.to_json(state)
    assert data == {
        "window_seq": 1,
        "first_ms": NOON,
        "fire_at_ms": NOON + 5,
        "event_id": "e",
        "event_ts_ms": NOON,
        "event_seq": 1,
    }
    assert decisions.from_json(DebounceState, {**data, "added_later": 3}) == state


@dataclasses.dataclass
class _Inner:
    n: int
    tags: list[str]


@dataclasses.dataclass
class _State:
    key: str
    until: int | None
    inner: _Inner
    items: list[_Inner]
    pairs: tuple[int, ...]
    extra: dict[str, list[int]]


def test_to_json_gives_what_asdict_gives_and_copies_containers() -> None:
    inner = _Inner(1, ["a"])
    state = _State("k", None, inner, [inner, _Inner(2, [])], (1, 2), {"x": [1]})
    reason = fifo_lane.wait_reason("acme", "run-1")
    for value in (
        state,
        reason,
        decisions.WaitReason("g", "", 5, "w"),
        DebounceState(**_debounce()),
    ):
        assert decisions.to_json(value) == dataclasses.asdict(value)
    made = decisions.to_json(state)
    made["inner"]["tags"].append("b")
    made["extra"]["x"].append(2)
    assert inner.tags == ["a"] and state.extra == {"x": [1]}  # the state is not shared


def _debounce() -> dict[str, object]:
    return {f.name: None for f in dataclasses.fields(DebounceState)}
