"""Concurrency scopes: Weir-only options, sent in the function config's `"weir"` block."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from weir.sdk._declaring.options import Wire, _drop_none, _expr, _int_at_least
from weir.sdk._declaring.problems import Problems

MAX_SCOPES = 8
MAX_NAME_BYTES = 512


@dataclass(frozen=True)
class Scope:
    """A resource several runs compete for: at most `limit` steps hold it at once, per value
    of `key` (a CEL expression over `event`). A `name` shares the scope with every function
    that names it; without one, the scope is this function's own. A run starts a step only
    with a slot of every scope it declares (and of its concurrency and app limits)."""

    limit: int
    key: str | None = None
    name: str | None = None

    def to_wire(self, p: Problems, option: str) -> Wire:
        _int_at_least(p, f"{option}.limit", self.limit, 1)
        _expr(p, f"{option}.key", self.key)
        if self.name is not None:
            size = len(self.name.encode()) if isinstance(self.name, str) else 0
            printable = isinstance(self.name, str) and self.name.isprintable()
            p.check(
                0 < size <= MAX_NAME_BYTES and printable,
                f"{option}.name",
                f"must be 1 to {MAX_NAME_BYTES} UTF-8 bytes of printable text, got {self.name!r}",
            )
        p.check(
            self.key is not None or self.name is not None,
            option,
            "needs a name, a key, or both",
        )
        return _drop_none({"name": self.name, "key": self.key, "limit": self.limit})


def _one(p: Problems, option: str, scope: object) -> Wire | None:
    if isinstance(scope, Scope):
        return scope.to_wire(p, option)
    p.add(option, f"must be a Scope(...), got {scope!r}")  # callers are not type-checked
    return None


def scopes_wire(p: Problems, scopes: Sequence[Scope], app_limit: int | None) -> Wire:
    """The scope options of the `"weir"` block (empty when none is set)."""
    block: Wire = {}
    p.check(
        len(scopes) <= MAX_SCOPES,
        "scopes",
        f"too_many_scopes: at most {MAX_SCOPES} are allowed, got {len(scopes)}",
    )
    if scopes:
        block["scopes"] = [_one(p, f"scopes[{i}]", scope) for i, scope in enumerate(scopes)]
    if app_limit is not None:
        _int_at_least(p, "app_limit", app_limit, 1)
        block["appLimit"] = app_limit
    return block
