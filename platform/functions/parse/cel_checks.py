"""Compile-checks of the CEL expressions in a config, through `weir.expressions`."""

from __future__ import annotations

from collections.abc import Sequence

from weir.expressions import check_expression

EVENT_ONLY = ("event",)
EVENT_AND_ASYNC = ("event", "async")


def expression_problems(source: str, variables: Sequence[str]) -> list[str]:
    """Messages saying why `source` does not compile with these variables ([] when fine)."""
    return check_expression(source, tuple(variables))
