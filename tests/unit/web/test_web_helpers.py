"""The UI's small helpers: reading the playground's lines, relative times."""

import pytest
from weir.web.display import ago
from weir.web.playground import parse_lines


def test_playground_lines_read_time_and_data() -> None:
    events = parse_lines('# a comment\n0 {"u": 1}\n\n1500\n2000   {"u": [1, 2]}\n')
    assert [(e.at_ms, e.data) for e in events] == [(0, {"u": 1}), (1500, {}), (2000, {"u": [1, 2]})]


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("", "type at least one event"),
        ("soon {}", "line 1: start with the time in ms"),
        ("0 {}\n-5 {}", "line 2: start with the time in ms"),
        ("0 {oops", "line 1: the data is not valid JSON"),
        ("0 [1]", "line 1: the data must be a JSON object"),
    ],
)
def test_playground_lines_name_the_bad_line(text: str, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        parse_lines(text)


@pytest.mark.parametrize(
    ("delta", "words"),
    [
        (0, "just now"),
        (999, "just now"),
        (12_300, "12 s ago"),
        (3 * 60_000, "3 min ago"),
        (-5 * 60_000, "in 5 min"),
        (2 * 86_400_000 + 5, "2 d ago"),
    ],
)
def test_relative_times(delta: int, words: str) -> None:
    assert ago(1_000_000_000_000 - delta, 1_000_000_000_000) == words
    assert ago(None, 0) == ""
