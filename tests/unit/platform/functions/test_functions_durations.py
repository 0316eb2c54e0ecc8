"""Duration strings: the SDK's form, Go's form, and clear refusals."""

import pytest
from weir.platform.functions.parse.durations import format_duration, parse_duration_ms


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("1s", 1_000),
        ("90s", 90_000),
        ("5m", 300_000),
        ("1h", 3_600_000),
        ("1d", 86_400_000),
        ("2w", 1_209_600_000),
        ("1h30m", 5_400_000),
        ("24h0m0s", 86_400_000),
        ("500ms", 500),
        ("1m500ms", 60_500),
        ("1.5h", 5_400_000),
        ("0.5s", 500),
        ("0", 0),
        ("0s", 0),
    ],
)
def test_accepts_sdk_and_go_forms(text: str, ms: int) -> None:
    assert parse_duration_ms(text) == ms


@pytest.mark.parametrize(
    "text",
    [
        "",
        "1",
        "s",
        "1 h",
        " 1h",
        "1h ",
        "-1s",
        "1y",
        "1.s",
        ".5s",
        "1e3s",
        "1hh",
        "0.0001s",
        "9" * 70 + "s",
    ],
)
def test_refuses_everything_else_with_the_allowed_forms(text: str) -> None:
    with pytest.raises(ValueError, match="like '30s'"):
        parse_duration_ms(text)


def test_refuses_a_non_string() -> None:
    with pytest.raises(ValueError, match="must be a string"):
        parse_duration_ms(30)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("ms", "text"),
    [
        (0, "0s"),
        (90_000, "90s"),
        (60_000, "1m"),
        (86_400_000, "1d"),
        (1_209_600_000, "2w"),
        (1_500, "1500ms"),
    ],
)
def test_format_picks_the_largest_exact_unit(ms: int, text: str) -> None:
    assert format_duration(ms) == text
    assert parse_duration_ms(text) == ms
