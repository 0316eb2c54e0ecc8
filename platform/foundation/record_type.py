"""Typed records: immutable to the type checker, cheap to build.

A frozen dataclass sets each field through `object.__setattr__` as it is built: for a record
of twenty fields that is six times the cost of a plain one (2.45 against 0.40 µs here), and
Weir builds several per call on its hot path (a run read back, its next queue item, the
notes of its transition). `record` declares a dataclass that mypy treats as frozen (it
refuses any assignment to a field after construction: `make typecheck`, which `make test`
runs, keeps them immutable) while Python builds it as a plain one; change one with
`dataclasses.replace`, as before. Records compare and hash by their fields, as frozen
dataclasses do (`eq=False`: by identity; a class's own `__hash__` is kept).

For what is made per event, per run or per call. Configuration that lives as long as the
process and is shared by every request (function configs, the registry, settings) stays a
frozen dataclass: built rarely, it keeps the run-time check too. A record and a frozen
dataclass cannot inherit from each other (Python refuses it at import; mypy does not see it).
"""

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar, dataclass_transform, overload

T = TypeVar("T")


@overload
def record(cls: type[T], /) -> type[T]: ...


@overload
def record(*, slots: bool = False, eq: bool = True) -> Callable[[type[T]], type[T]]: ...


@dataclass_transform(frozen_default=True, field_specifiers=(field,))
def record(cls: Any = None, /, *, slots: bool = False, eq: bool = True) -> Any:
    """`@record`, `@record(slots=True)` or `@record(eq=False)` on a class of typed fields."""

    def build(plain: type[T]) -> type[T]:
        own_hash = "__hash__" in plain.__dict__
        return dataclass(slots=slots, eq=eq, unsafe_hash=eq and not own_hash)(plain)

    return build if cls is None else build(cls)
