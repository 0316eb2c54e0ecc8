"""A JSON object held as its bytes: how a large event reaches the evaluator without being
turned into Python objects in the serving process.

Building millions of Python objects holds the GIL for a tenth of a second per 3 MiB, which
stalls every request of the process. A `Document` carries the serialized object and the few
small top-level fields the caller already knows (an event's name, id, ts); an evaluation that
reads anything else is sent with the bytes to a worker process, which parses them once per
`key` and keeps them for the next evaluation over the same document.

It is a dict so that code written for plain payloads keeps working: reading a field that is
not known parses the bytes here, once (correct, but the stall a Document exists to avoid), so
hot paths test `isinstance(value, Document)` and use `raw` instead.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson


class Document(dict[str, Any]):
    __slots__ = ("_keys", "_whole", "evaluated", "key", "raw")

    def __init__(
        self,
        key: str,
        raw: bytes,
        known: dict[str, Any],
        keys: tuple[str, ...],
        evaluated: dict[str, tuple[Any, float]] | None = None,
    ):
        """`raw`: the object as JSON; `known`: some of its top-level fields, as parsed;
        `keys`: all of its top-level keys, in order; `key`: names these bytes, and no other
        bytes, for the workers' caches (an event's id); `evaluated`: outcomes of expressions
        already evaluated over it with it as their one variable, by source (the value or the
        EvaluationError, and the ms it took), so a caller need not evaluate them again."""
        super().__init__(known)
        self.key, self.raw, self._keys, self._whole = key, raw, keys, False
        self.evaluated = {} if evaluated is None else evaluated

    def knows(self, name: str) -> bool:
        """Whether the field `name` can be read without parsing (or is absent altogether)."""
        return self._whole or dict.__contains__(self, name) or name not in self._keys

    def materialize(self) -> None:
        """Parse the bytes into this dict (once); every later read is a plain dict read."""
        if not self._whole:
            parsed = orjson.loads(self.raw)
            dict.clear(self)
            dict.update(self, parsed)
            self._whole = True

    def __getitem__(self, name: str) -> Any:
        if not self.knows(name):
            self.materialize()
        return dict.__getitem__(self, name)

    def get(self, name: str, default: Any = None) -> Any:
        if not self.knows(name):
            self.materialize()
        return dict.get(self, name, default)

    def __contains__(self, name: object) -> bool:
        return dict.__contains__(self, name) if self._whole else name in self._keys

    def __iter__(self) -> Iterator[str]:
        return dict.__iter__(self) if self._whole else iter(self._keys)

    def __len__(self) -> int:
        return dict.__len__(self) if self._whole else len(self._keys)

    def __eq__(self, other: object) -> bool:
        self.materialize()
        if isinstance(other, Document):
            other.materialize()
        return dict.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = None

    def __repr__(self) -> str:
        return f"Document({self.key!r}, {len(self.raw)} bytes)"

    def __reduce__(self) -> Any:
        return (dict, (self.copy(),))  # sent elsewhere as the plain dict it stands for


def _whole_first(name: str) -> Any:
    """A dict method that needs every field: parse first, then the plain dict method."""
    method = getattr(dict, name)

    def whole(self: Document, *args: Any, **kwargs: Any) -> Any:
        self.materialize()
        return method(self, *args, **kwargs)

    whole.__name__ = name
    return whole


for _name in (
    "keys", "items", "values", "copy", "__setitem__", "__delitem__", "pop", "popitem",
    "setdefault", "update", "__or__", "__ior__", "__ror__",
):  # fmt: skip
    setattr(Document, _name, _whole_first(_name))
