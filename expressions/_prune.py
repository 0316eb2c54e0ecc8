"""Cut an activation down to the member paths an expression reads.

The Rust evaluator converts every dict entry it is given (~1-3 µs each) and copies whatever a
member access traverses, so handing it a 50 KB event costs ~15 ms. A copy holding only the
referenced paths costs the same at any payload size. A path's last field keeps its whole value;
anything that is not a dict along the way is kept whole too, and a missing key stays missing,
so the evaluator reaches exactly the same values, errors and `has()` answers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

# A trie of field names; None marks "keep the whole value from here".
Trie = dict[str, "Trie | None"]


def minimal_paths(paths: Iterable[tuple[str, ...]]) -> tuple[tuple[str, ...], ...]:
    """Sorted, without duplicates, and without any path that extends another one."""
    kept: list[tuple[str, ...]] = []
    for path in sorted(set(paths)):  # a prefix sorts before everything that extends it
        if not kept or path[: len(kept[-1])] != kept[-1]:
            kept.append(path)
    return tuple(kept)


def build_trie(paths: Iterable[tuple[str, ...]]) -> Trie:
    """A trie of minimal paths (see minimal_paths), rooted at the variable names."""
    root: Trie = {}
    for path in paths:
        node = root
        for name in path[:-1]:
            child = node.setdefault(name, {})
            assert child is not None  # minimal paths never extend a kept-whole prefix
            node = child
        node[path[-1]] = None
    return root


def prune(activation: Mapping[str, Any], trie: Trie) -> dict[str, Any]:
    """A copy of `activation` holding only what `trie` selects; the values are not copied."""
    pruned: dict[str, Any] = {}
    stack: list[tuple[Mapping[str, Any], Trie, dict[str, Any]]] = [(activation, trie, pruned)]
    while stack:  # explicit stack: a 4 KB member chain is ~2000 fields deep
        source, node, target = stack.pop()
        for name, child in node.items():
            if name not in source:
                continue
            value = source[name]
            if child is None or not isinstance(value, dict):
                target[name] = value
            else:
                copy: dict[str, Any] = {}
                target[name] = copy
                stack.append((value, child, copy))
    return pruned
