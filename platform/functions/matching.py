"""Which trigger patterns an incoming event name can match (docs/semantics.md, Triggers).

Rather than testing every trigger against every event, the platform derives the few patterns
an event name could match and looks those up in an index of trigger names.
"""

from __future__ import annotations

import functools


@functools.lru_cache(maxsize=4096)  # a few event names recur: every run's finished event
def trigger_patterns(event_name: str) -> tuple[str, ...]:
    """The exact name, then `prefix/*` for each "/" and `prefix.*` for each "." in it."""
    patterns = [event_name]
    for separator in ("/", "."):
        patterns.extend(_prefix_wildcards(event_name, separator))
    return tuple(_unique(patterns))


def _prefix_wildcards(name: str, separator: str) -> list[str]:
    # A wildcard sits right after a separator and stands for the rest of the name, so each
    # separator position yields one pattern; a bare "*" is never produced.
    return [name[: index + 1] + "*" for index, char in enumerate(name) if char == separator]


def _unique(patterns: list[str]) -> list[str]:
    # A bare "*" never matches, even for an event literally named "*".
    return [pattern for pattern in dict.fromkeys(patterns) if pattern != "*"]


def is_valid_trigger_pattern(event: str) -> bool:
    """A trigger name may hold one "*", and only as its last character after "/" or "."."""
    star = event.find("*")
    if star == -1:
        return True
    return star == len(event) - 1 and star > 0 and event[star - 1] in "/."
