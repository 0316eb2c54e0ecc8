"""jsonvalues: whatever JSON it accepts can be stored, served and sent as canonical JSON, and
what it refuses is named by its path."""

import json
from typing import Any

import orjson
import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st
from weir.platform.foundation import jsonvalues

SAFE = 2**53 - 1
NUMBERS = (
    st.integers(-SAFE, SAFE)
    | st.integers()
    | st.sampled_from([SAFE, SAFE + 1, -SAFE, -SAFE - 1, 2**64, -(2**70)])
    | st.floats()
    | st.sampled_from([1e20, -1e20, 2.0**53, 9.5e15, 1e21, 1.2345678901234567e19, 2.0**53 - 2])
)
TEXT = st.text(max_size=6) | st.sampled_from(["\ud800", "a\udfffb", "\U0001f600"])
VALUES = st.recursive(
    st.none() | st.booleans() | NUMBERS | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=10,
)


def _wire(value: Any) -> str:
    return json.dumps(value)  # writes NaN, Infinity and lone surrogates (as \\ud800) too


@settings(max_examples=400, deadline=None)
@given(VALUES)
def test_what_is_accepted_can_be_sent_and_served_and_the_quick_check_agrees(value: Any) -> None:
    parsed = jsonvalues.loads(_wire(value))
    found = jsonvalues.problem(parsed, "v")
    assert found == jsonvalues._walk(parsed, "v")  # the C quick path never decides otherwise
    if found is None:
        sent = rfc8785.dumps(parsed)  # what the app is sent
        assert rfc8785.dumps(json.loads(sent)) == sent  # what an SDK reads back and checks
        json.dumps(parsed, allow_nan=False).encode()  # what the API answers
    else:
        assert found.startswith("v")


def test_the_limits_are_exact() -> None:
    assert jsonvalues.problem(jsonvalues.loads(f"[{SAFE}, {-SAFE}, 1e308, 5e-324]")) is None
    assert "[1] is 9007199254740992" in str(
        jsonvalues.problem(jsonvalues.loads(f"[1, {SAFE + 1}]"))
    )
    assert "is Infinity" in str(jsonvalues.problem(jsonvalues.loads("[1e309]")))
    deep = "[" * 254 + "]" * 254
    assert jsonvalues.problem(jsonvalues.loads(deep)) is None
    assert "deeper than 254" in str(jsonvalues.problem(jsonvalues.loads(f"[{deep}]")))


@pytest.mark.parametrize("text", ["1e20", "-1E20", "9007199254740992.0", "12345678901234567890.5"])
def test_whole_numbers_canonical_json_sends_as_long_integers_are_named(text: str) -> None:
    found = str(jsonvalues.problem(jsonvalues.loads(f'{{"data": {{"n": [1, {text}]}}}}')))
    assert found.startswith("data.n[1] is ") and "canonical JSON" in found


@pytest.mark.parametrize("text", ["1e21", "9007199254740990.0", "1.5e300", "0.1", "-2.5e15"])
def test_numbers_that_come_back_the_same_are_kept(text: str) -> None:
    """Strings shaped like the refused numbers do not count: only numbers do."""
    value = jsonvalues.loads(f'{{"s": "1e+17 and 1234567890123456.5", "n": {text}}}')
    assert jsonvalues.problem(value) is None


def test_paths_name_odd_keys_readably() -> None:
    value = jsonvalues.loads('{"data": {"a b": [{"x": NaN}]}}')
    assert str(jsonvalues.problem(value)).startswith('data["a b"][0].x is NaN')


def test_nesting_past_the_parser_is_a_value_error_not_a_crash() -> None:
    with pytest.raises(ValueError, match="nested too deeply"):
        jsonvalues.loads("[" * 100_000 + "]" * 100_000)


@pytest.mark.parametrize(
    "text",
    [
        b'{"n": 18446744073709551617}',  # past 64 bits: orjson would make it a float
        b'{"n": -9223372036854775809}',
        b'{"n": 9223372036854775808}',
        b"[1.5, -0.0, 1E2, 0, -0, 1e308, 5e-324, 1.5e-400]",
        b'{"a": 1, "a": 2, "s": "\\u00e9\\ud83d\\ude00", "id": "1234567890123456789012"}',
        b'{"x": NaN, "y": 1e400}',
        b'"\\ud800"',
    ],
)
def test_the_fast_parser_and_the_exact_one_agree(text: bytes) -> None:
    fast = jsonvalues.loads(text)
    exact = jsonvalues.loads(text.decode())  # text goes the exact way
    assert repr(fast) == repr(exact)
    assert jsonvalues.problem(fast) == jsonvalues.problem(exact)


def test_an_integer_past_64_bits_keeps_every_digit() -> None:
    assert jsonvalues.loads(b"[18446744073709551617]") == [18446744073709551617]
    problem = jsonvalues.problem(jsonvalues.loads(b'{"n": 18446744073709551617}'))
    assert problem is not None and problem.startswith("n is 18446744073709551617, an integer")


@settings(max_examples=300, deadline=None)
@given(st.floats(min_value=2.0**53, max_value=1e21, exclude_max=True), st.booleans())
def test_the_quick_look_never_misses_a_number_canonical_json_sends_as_long_digits(
    number: float, negative: bool
) -> None:
    value = {"data": {"n": -number if negative else number}}
    assert jsonvalues.may_hold_big_float(orjson.dumps(value))
    assert jsonvalues.problem(value) is not None
