"""The fast canonical JSON writes exactly what RFC 8785 (the `rfc8785` package) writes, and
refuses what it refuses."""

import math

import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st
from weir.platform.executor import canonical

LIMIT = canonical.MAX_EXACT_INT
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-LIMIT, max_value=LIMIT)
    | st.integers()  # past ±(2^53-1) too: both must refuse those
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()  # any code point, control characters and surrogates included
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


def _rfc8785(value: object) -> bytes | type[Exception]:
    try:
        return bytes(rfc8785.dumps(value))
    except rfc8785.CanonicalizationError as exc:
        return type(exc)


def _ours(value: object) -> bytes | type[Exception]:
    try:
        return canonical.dumps(value)
    except rfc8785.CanonicalizationError as exc:
        return type(exc)


@settings(max_examples=600, deadline=None)
@given(values)
def test_the_same_bytes_or_the_same_refusal_as_rfc8785(value: object) -> None:
    assert _ours(value) == _rfc8785(value)


@pytest.mark.parametrize(
    "value",
    [
        {"b": 1, "a": {"d": [True, None], "c": "x"}},
        '\x00\x01\x08\t\n\x0b\x0c\r\x1f\x7f\u2028\u2029é😀"\\/',
        {"\u00e9": 1, "e": 2, "\U0001f600": 3, "\ufb01": 4},  # keys UTF-16 order differs
        [LIMIT, -LIMIT],
        [1.0, 1e21, 1e-7, 0.1, -0.0, 100.0],
        {"nested": [[[{"deep": "\ud800"}]]]},  # a lone surrogate
    ],
)
def test_edge_values_agree(value: object) -> None:
    assert _ours(value) == _rfc8785(value)


@pytest.mark.parametrize("value", [LIMIT + 1, -LIMIT - 1, math.nan, math.inf])
def test_what_rfc8785_refuses_is_refused(value: object) -> None:
    with pytest.raises(rfc8785.CanonicalizationError):
        canonical.dumps({"x": value})


# Floats in and around the range the fast path takes (fractions, 1e-5 <= |x| < 1e15), bounds
# and their neighbours included.
near_bounds = st.sampled_from(
    [
        canonical.PLAIN_FLOAT_MIN,
        canonical.PLAIN_FLOAT_MAX,
        math.nextafter(canonical.PLAIN_FLOAT_MIN, 0),
        math.nextafter(canonical.PLAIN_FLOAT_MAX, 0),
        math.nextafter(canonical.PLAIN_FLOAT_MAX, math.inf),
        1e-4,
        1e-6,
        1e16,
        2.0**53 - 0.5,
    ]
)
fast_range = st.floats(min_value=-1e16, max_value=1e16, allow_nan=False) | st.builds(
    lambda exponent, mantissa: mantissa * 10.0**exponent,
    st.integers(min_value=-7, max_value=16),
    st.floats(min_value=-10, max_value=10, allow_nan=False),
)


@settings(max_examples=2000, deadline=None)
@given(fast_range | near_bounds | near_bounds.map(lambda x: -x))
def test_floats_near_the_fast_range_agree(value: float) -> None:
    assert _ours({"x": value, "list": [value]}) == _rfc8785({"x": value, "list": [value]})


def test_a_timestamp_in_seconds_takes_the_fast_path() -> None:
    # an event carrying `time.time()`: written by orjson, not by the pure-Python serializer
    assert canonical._plain({"data": {"sent": 1796312417.0794523, "price": 0.1}})
    assert not canonical._plain({"data": {"whole": 12.0}})
