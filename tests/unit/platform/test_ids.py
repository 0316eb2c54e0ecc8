"""Ids: ULID text carrying the exact millisecond they were made at, increasing within one."""

import re

from hypothesis import given
from hypothesis import strategies as st
from ulid import ULID
from weir.platform.foundation.ids import id_time_ms, new_id, ulid_text

ULID_TEXT = re.compile(r"[0-7][0-9A-HJKMNP-TV-Z]{25}")  # Crockford's base 32, 128 bits


def test_an_id_is_ulid_text_of_its_millisecond() -> None:
    for ms in (0, 1, 1_796_312_417_080, 2**48 - 1):
        made = new_id(ms)
        assert ULID_TEXT.fullmatch(made), made
        assert str(ULID.from_str(made)) == made
        assert id_time_ms(made) == ms


def test_the_millisecond_is_exact_where_seconds_as_a_float_would_round_it_down() -> None:
    # 1076472027465 / 1000 * 1000 is 1076472027464.9998: an id made through seconds carried
    # the millisecond before (cancel-on compares an event's id time with a run's start)
    assert id_time_ms(new_id(1_076_472_027_465)) == 1_076_472_027_465


def test_ids_of_one_millisecond_increase_by_one() -> None:
    ms = 1_796_312_417_080
    made = [new_id(ms) for _ in range(50)]
    numbers = [int(ULID.from_str(text)) for text in made]
    assert numbers == list(range(numbers[0], numbers[0] + 50))
    assert made == sorted(made)
    assert new_id(ms + 1) > made[-1]


def test_ids_of_different_milliseconds_sort_by_time() -> None:
    made = [new_id(ms) for ms in (1_000, 2_000, 2_001, 90_000_000)]
    assert made == sorted(made)
    assert len(set(made)) == len(made)


@given(st.integers(min_value=0, max_value=2**128 - 1))
def test_the_text_of_any_128_bit_value_is_the_ulid_package_s(value: int) -> None:
    assert ulid_text(value) == str(ULID.from_int(value))
