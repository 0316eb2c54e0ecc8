"""Candidate trigger patterns for an incoming event name (docs/semantics.md, Triggers)."""

import pytest
from weir.platform.functions.matching import is_valid_trigger_pattern, trigger_patterns


def test_slash_prefixes_give_wildcards() -> None:
    assert trigger_patterns("api/v1/users") == (
        "api/v1/users",
        "api/*",
        "api/v1/*",
    )


def test_dot_prefixes_give_wildcards() -> None:
    assert trigger_patterns("app/user.created") == (
        "app/user.created",
        "app/*",
        "app/user.*",
    )


def test_dots_and_slashes_at_any_depth() -> None:
    assert trigger_patterns("a.b/c.d") == (
        "a.b/c.d",
        "a.b/*",
        "a.*",
        "a.b/c.*",
    )


def test_a_name_without_separators_matches_only_itself() -> None:
    assert trigger_patterns("signup") == ("signup",)


@pytest.mark.parametrize("name", ["api/v1/users", "app/user.created", "signup", "*", "a/*"])
def test_a_bare_star_is_never_a_candidate(name: str) -> None:
    assert "*" not in trigger_patterns(name)


@pytest.mark.parametrize(
    ("pattern", "valid"),
    [
        ("app/e", True),
        ("app/*", True),
        ("app/user.*", True),
        ("*", False),
        ("app/*/x", False),
        ("app*", False),
        ("app/**", False),
    ],
)
def test_trigger_names_may_only_end_in_a_wildcard(pattern: str, valid: bool) -> None:
    assert is_valid_trigger_pattern(pattern) is valid
