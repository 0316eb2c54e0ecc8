"""Compile-checks of the CEL expressions in a config, through `weir.expressions`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from importlib import import_module

EVENT_ONLY = ("event",)
EVENT_AND_ASYNC = ("event", "async")

Checker = Callable[[str, Sequence[str]], list[str]]


def expression_problems(source: str, variables: Sequence[str]) -> list[str]:
    """Messages saying why `source` does not compile with these variables ([] when fine)."""
    checker = _checker()
    return [] if checker is None else list(checker(source, tuple(variables)))


def _checker() -> Checker | None:
    # weir.expressions is built alongside this package; until its checker exists, configs
    # are accepted unchecked rather than making every sync fail.
    try:
        module = import_module("weir.expressions")
    except ImportError:
        return None
    checker: Checker | None = getattr(module, "check_expression", None)
    return checker
