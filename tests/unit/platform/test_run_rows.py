"""Decoding a `runs` row (store/run_records.run_from_row): the shortcuts for an empty list and a
single id read exactly what the JSON decoder reads."""

import json

from hypothesis import given
from hypothesis import strategies as st
from weir.platform.store.records.runs import _ids, _list

texts = st.text(max_size=30)


@given(st.lists(texts, max_size=4), st.booleans())
def test_id_lists_read_as_the_json_decoder_reads_them(ids: list[str], compact: bool) -> None:
    separators = (",", ":") if compact else (", ", ": ")
    for ascii_only in (True, False):
        text = json.dumps(ids, separators=separators, ensure_ascii=ascii_only)
        assert _ids(text) == tuple(json.loads(text))


def test_plain_lists_read_as_the_json_decoder_reads_them() -> None:
    for text in ("[]", "[ ]", '[{"id": "s1", "race": true}]', '["a"]', "[1, 2]"):
        assert _list(text) == json.loads(text)
