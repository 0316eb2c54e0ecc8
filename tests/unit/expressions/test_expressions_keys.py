"""Stable keys for evaluation results, and their fixed-length hashes."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from weir.expressions import compile_expression, key_hash, stable_key


@pytest.mark.parametrize(
    ("value", "key"),
    [
        ("acc_42", "acc_42"),
        ("", ""),
        ("ünïcode", "ünïcode"),
        (120, "120"),
        (120.0, "120"),
        (-0.0, "0"),
        (1.5, "1.5"),
        (float(2**53 - 1), "9007199254740991"),
        (float(2**53), "9007199254740992.0"),  # no longer exactly an integer: stays a float
        (2**70, "1180591620717411303424"),
        (True, "true"),
        (False, "false"),
        (None, "null"),
        ({"b": 1.0, "a": [2.0, "x", None]}, '{"a":[2,"x",null],"b":1}'),
        ({"k": "ü"}, '{"k":"ü"}'),
        ([{"z": {"y": 3.0}}], '[{"z":{"y":3}}]'),
        ({2: "a", True: "b"}, '{"2":"a","true":"b"}'),
        (b"\x00\xff", '"AP8="'),
        (datetime(2024, 1, 2, tzinfo=UTC), '"2024-01-02T00:00:00+00:00"'),
        (timedelta(seconds=90), '"90s"'),
        (timedelta(milliseconds=1500), '"1.5s"'),
    ],
)
def test_stable_key(value: Any, key: str) -> None:
    assert stable_key(value) == key


def test_equal_values_in_any_spelling_share_a_key() -> None:
    assert stable_key({"a": 1, "b": [1, 2]}) == stable_key({"b": [1.0, 2.0], "a": 1.0})
    assert stable_key((1, 2)) == stable_key([1, 2])


def test_keys_of_evaluation_results() -> None:
    expression = compile_expression("event.data.plan == 'pro' ? event.data.seats : event.data")
    pro = {"event": {"data": {"plan": "pro", "seats": 3.0}}}
    other = {"event": {"data": {"seats": 1, "plan": "free"}}}
    assert stable_key(expression.evaluate(pro)) == "3"
    assert stable_key(expression.evaluate(other)) == '{"plan":"free","seats":1}'


def test_key_hash_is_a_32_character_sha256_prefix() -> None:
    digest = key_hash("acc_42")
    assert digest == hashlib.sha256(b"acc_42").hexdigest()[:32]
    assert len(key_hash("")) == len(key_hash("x" * 10_000)) == 32
    assert key_hash("ü") == hashlib.sha256("ü".encode()).hexdigest()[:32]
    assert key_hash("a") != key_hash("b")
