"""A 200 answer's body becomes the run's output as Inngest reads it: JSON as its value, an
object encoded twice as the object, other text as a string, an empty body as null."""

import pytest
from weir.platform.executor.response import Completed, RawResponse, classify, output_of

SDK = {"x-inngest-sdk": "py:v0.5.19"}


@pytest.mark.parametrize(
    ("body", "output"),
    [
        (b'{"a": 1}', {"a": 1}),
        (b'"woke"', "woke"),
        (b"[1, 2]", [1, 2]),
        (b"7", 7),
        (b"null", None),
        (b"", None),
        (b"  \n", None),
        (b'"{\\"a\\": 1}"', {"a": 1}),  # an object the SDK encoded twice
        (b'"{not an object}"', "{not an object}"),  # looks like one, is not: stays text
        (b"woke", "woke"),  # a returned string sent as raw text
        (b"{broken", "{broken"),
        (b"\xff\xfeok", "\ufffd\ufffdok"),  # not UTF-8: replaced, never an exception
    ],
)
def test_a_200_body_is_read_as_inngest_reads_it(body: bytes, output: object) -> None:
    assert output_of(body) == output
    assert classify(RawResponse(200, SDK, body), 0) == Completed(output)


def test_raw_text_is_still_checked_like_any_output() -> None:
    outcome = classify(RawResponse(200, SDK, b"1e400"), 0)  # JSON, but not a keepable number
    assert not isinstance(outcome, Completed)
