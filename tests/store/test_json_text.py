"""The JSON text of Weir's own columns reads back as the standard library would read it, for
every value, including those orjson alone would get wrong."""

import json
import math
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from weir.expressions._document import Document
from weir.platform.store.engine import json_text

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()  # unbounded: past 64 bits too
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),  # lone surrogates included
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(JSON_VALUES)
def test_every_value_reads_back_as_json_writes_and_reads_it(value: Any) -> None:
    text = json_text.dumps(value)
    assert json_text.loads(text) == json.loads(json.dumps(value)) == value
    assert json_text.loads(text.encode("utf-8", "surrogatepass")) == value


def test_the_text_is_compact_and_keeps_characters_as_they_are() -> None:
    assert json_text.dumps({"a": [1, "é"], "b": None}) == '{"a":[1,"é"],"b":null}'


def test_integers_past_64_bits_are_written_and_read_exactly() -> None:
    big = 2**64 + 1
    assert json_text.dumps([big, -big]) == f"[{big},{-big}]"
    assert orjson.loads(f"[{big}]") != [big]  # what the check guards against
    assert json_text.loads(f'{{"n":{big}}}') == {"n": big}
    assert json_text.loads(f"[{big}]".encode()) == [big]


def test_keys_that_are_not_strings_are_written_as_json_writes_them() -> None:
    assert json_text.dumps({1: "a", None: "b"}) == '{"1":"a","null":"b"}'


def test_a_document_is_written_whole_by_its_own_methods() -> None:
    raw = orjson.dumps({"name": "e", "data": {"x": [1, 2]}})
    document = Document("event-1", raw, {"name": "e"}, ("name", "data"))
    assert json.loads(json_text.dumps({"event": document})) == {
        "event": {"name": "e", "data": {"x": [1, 2]}}
    }


def test_what_json_refuses_to_write_is_still_refused() -> None:
    @dataclass
    class Point:
        x: int

    for value in (Point(1), datetime(2026, 12, 4, tzinfo=UTC), {1.5, 2}, b"raw"):
        with pytest.raises(TypeError):
            json_text.dumps({"v": value})


def test_nan_and_the_infinities_are_written_as_null() -> None:
    assert json_text.dumps([math.nan, math.inf, -math.inf, 1.0]) == "[null,null,null,1.0]"


def test_what_orjson_refuses_to_read_is_read_as_json_reads_it() -> None:
    assert math.isnan(json_text.loads("[NaN]")[0])
    assert json_text.loads('"\\ud800"') == "\ud800"


@pytest.mark.parametrize("bad", ["", "{", "[1,]", "nul", "[" + "1" * 19 + ","])
def test_text_that_is_not_json_is_refused(bad: str) -> None:
    with pytest.raises(ValueError):
        json_text.loads(bad)
