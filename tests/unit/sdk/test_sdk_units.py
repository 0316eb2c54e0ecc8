"""Durations, step-id hashing and memo unwrapping."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from weir.sdk import StepError
from weir.sdk._durations import iso_utc, to_timedelta, to_wire
from weir.sdk._steps.memo import unwrap
from weir.sdk._steps.ops import hash_step_id

from tests.unit.sdk.sdk_proto_app import fixture


@pytest.mark.parametrize(
    ("value", "wire"),
    [
        ("30s", "30s"),
        ("90s", "90s"),
        ("60s", "1m"),
        ("5m", "5m"),
        ("1h30m", "90m"),
        ("24h", "1d"),
        ("14d", "2w"),
        ("1w1d", "8d"),
        (timedelta(seconds=1), "1s"),
        (timedelta(hours=2), "2h"),
        (timedelta(days=7), "1w"),
    ],
)
def test_durations_use_the_largest_exact_unit(value: Any, wire: str) -> None:
    assert to_wire(value) == wire


@pytest.mark.parametrize(
    "value",
    [
        "",
        "10",
        "1.5s",
        "5 m",
        "1x",
        "m5",
        "-5s",
        5,
        5.0,
        None,
        True,
        "0s",
        timedelta(0),
        timedelta(milliseconds=500),
        timedelta(seconds=1, milliseconds=500),
    ],
)
def test_bad_durations_are_rejected(value: Any) -> None:
    with pytest.raises(ValueError, match=r"(expected|at least|whole number)"):
        to_wire(value)


def test_to_timedelta_allows_sub_second_timedeltas_for_sleeps() -> None:
    assert to_timedelta(timedelta(milliseconds=1)) == timedelta(milliseconds=1)


def test_iso_utc_has_three_fraction_digits_and_z() -> None:
    moment = datetime(2030, 1, 2, 4, 4, 5, 678900, tzinfo=timezone(timedelta(hours=1)))
    assert iso_utc(moment) == "2030-01-02T03:04:05.678Z"
    assert iso_utc(datetime(2030, 1, 2)) == "2030-01-02T00:00:00.000Z"
    assert iso_utc(datetime(2030, 1, 2, tzinfo=UTC)) == "2030-01-02T00:00:00.000Z"


@pytest.mark.parametrize("seen", fixture("hashing/step_id_hashing.json")["observations"])
def test_step_id_hashing_matches_every_observation(seen: dict[str, Any]) -> None:
    assert hash_step_id(seen["userland_id"], seen["index"]) == seen["observed_id"]


@pytest.mark.parametrize(
    ("memo", "value"),
    [
        ({"data": {"n": 1}}, {"n": 1}),
        ({"data": None}, None),
        ({}, None),
        (None, None),
        ({"data": 5, "error": None}, 5),
        ({"error": "oops"}, {"error": "oops"}),
        ({"error": {"message": "m"}}, {"error": {"message": "m"}}),
        ({"data": 1, "other": 2}, {"data": 1, "other": 2}),
        ({"name": "app/approved", "data": {"id": 7}}, {"name": "app/approved", "data": {"id": 7}}),
        ([1, 2], [1, 2]),
        ("text", "text"),
    ],
)
def test_memo_unwrapping(memo: Any, value: Any) -> None:
    assert unwrap(memo) == value


def test_error_memo_raises_step_error() -> None:
    memo = {"error": {"name": "ValueError", "message": "boom", "stack": "tb", "noRetry": True}}
    with pytest.raises(StepError, match="boom") as caught:
        unwrap(memo)
    assert (caught.value.name, caught.value.stack) == ("ValueError", "tb")


def test_retry_after_error_refuses_a_bare_number_where_it_is_raised() -> None:
    from weir.sdk import RetryAfterError

    with pytest.raises(TypeError, match="retry_after must be a timedelta or a datetime, got int"):
        RetryAfterError("later", retry_after=5)  # type: ignore[arg-type]
