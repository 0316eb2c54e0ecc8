"""Collects configuration problems so that one error can list all of them."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from weir.sdk._errors import InvalidFunctionsError

T = TypeVar("T")


class Problems:
    """Problems of one function; `where` prefixes each with the function and option."""

    def __init__(self, function_id: str, sink: list[str]) -> None:
        self.function_id = function_id
        self._sink = sink

    def add(self, option: str, message: str) -> None:
        self._sink.append(f"function {self.function_id!r}: {option}: {message}")

    def check(self, ok: bool, option: str, message: str) -> None:
        if not ok:
            self.add(option, message)

    def attempt(self, option: str, convert: Callable[[], T]) -> T | None:
        """Run a conversion, recording its ValueError as a problem of `option`."""
        try:
            return convert()
        except ValueError as err:
            self.add(option, str(err))
            return None


def raise_if_any(problems: list[str]) -> None:
    if problems:
        raise InvalidFunctionsError(problems)
