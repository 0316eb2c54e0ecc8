"""Priority: clamping of the expression result and the resulting queue order."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from weir.platform.gates import priority

NOON = 1_767_268_800_000


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0, 0),
        (120, 120),
        (-30, -30),
        (600, 600),
        (601, 600),
        (10**9, 600),
        (-600, -600),
        (-601, -600),
        (-(10**9), -600),
        (1.0, 0),
        (2.5, 0),
        (True, 0),
        ("100", 0),
        (None, 0),
        (ValueError("no such key"), 0),
    ],
)
def test_clamp(value: object, expected: int) -> None:
    assert priority.clamp(value) == expected


def test_int_subclasses_from_cel_are_integers() -> None:
    class CelInt(int):
        pass

    assert priority.clamp(CelInt(700)) == 600
    assert type(priority.clamp(CelInt(5))) is int


def test_priority_orders_as_though_created_earlier() -> None:
    runs = {
        "old-normal": priority.run_score_ms(NOON, 0),
        "new-urgent": priority.run_score_ms(NOON + 100_000, 120),  # as if at NOON − 20 s
        "newer-normal": priority.run_score_ms(NOON + 1_000, 0),
        "old-low": priority.run_score_ms(NOON - 50_000, -60),  # as if at NOON + 10 s
        "capped": priority.run_score_ms(NOON + 700_000, 10_000),  # only 600 s earlier
    }
    order = sorted(runs, key=runs.__getitem__)
    assert order == ["new-urgent", "old-normal", "newer-normal", "old-low", "capped"]
    assert runs["new-urgent"] == NOON - 20_000
    assert runs["capped"] == NOON + 100_000


@given(st.integers(), st.integers(min_value=0, max_value=2**45))
def test_score_is_always_within_ten_minutes_of_creation(value: int, created: int) -> None:
    assert abs(priority.run_score_ms(created, value) - created) <= 600_000
