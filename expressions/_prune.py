"""Cut an activation down to the member paths an expression reads.

The Rust evaluator converts every dict entry it is given (~1-3 µs each) and copies whatever a
member access traverses, so handing it a 50 KB event costs ~15 ms. A copy holding only the
referenced paths costs the same at any payload size. A path's last field keeps its whole value;
anything that is not a dict along the way is kept whole too, and a missing key stays missing,
so the evaluator reaches exactly the same values, errors and `has()` answers.
"""

from __future__ import annotations

from collections.abc import Iterable

from weir.expressions._worker import Trie, prune

__all__ = ["Trie", "build_trie", "minimal_paths", "prune"]


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
