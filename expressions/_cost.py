"""Is this evaluation provably cheap? A static look at the expression and a bounded look at data.

The Rust evaluator cannot be interrupted in-process, holds the GIL while it runs, and costs
~1-3 µs per map entry just to receive its input; a member access copies what it traverses, and
`map`/`filter` accumulate their result quadratically (1,000 items ~90 ms, 16,000 items ~10 s).
Without a loop, each operator's result is at most the sum of its operands, so the work and the
result are bounded by (references + 1) x weight, where weight counts the values handed to the
evaluator (one unit per value, plus one per 64 bytes of text). Each loop (comprehension) or
`matches` (its pattern may come from data) multiplies that by the weight once more.

An evaluation is cheap when the weight and that product are both small; only those run
in-process. Everything else goes to a supervised worker process. Measuring the weight stops
as soon as it passes the limit, so a 3 MiB event costs no more to measure than a small one.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from weir.expressions._tree import COMPREHENSIONS, Node, token_text

MAX_CHEAP_WEIGHT = 256  # ~0.5 ms of conversion at worst
MAX_CHEAP_WORK = 1 << 16  # (references + 1) x weight^(1 + loops): a few ms at worst
TEXT_BYTES_PER_UNIT = 64

_LOOPS = COMPREHENSIONS | {"matches"}
_SCALARS = frozenset({str, int, float, bool, type(None)})


@dataclass(frozen=True)
class StaticCost:
    references: int  # member chains rooted at a variable, each occurrence counted
    loops: int  # comprehensions, plus `matches` calls
    literal_weight: int  # the source's own text, as weight
    cheap_weight: int  # the largest total weight that is still cheap (0: never)


def static_cost(tree: Node, references: int, source: str) -> StaticCost:
    loops = _loops(tree)
    literal = _text_weight(len(source.encode("utf-8")))
    return StaticCost(references, loops, literal, _largest_cheap_weight(references, loops))


def is_cheap(cost: StaticCost, activation: dict[str, Any]) -> bool:
    """True only when the evaluation is bounded to a few milliseconds and a small result."""
    room = cost.cheap_weight - cost.literal_weight
    return room > 0 and weight(activation.values(), room) <= room


def weight(values: Iterable[Any], limit: int) -> int:
    """The weight of `values`, or anything above `limit` once it is known to pass it."""
    total = 0
    stack = list(values)
    while stack and total <= limit:
        value = stack.pop()
        kind = type(value)  # exact types first: this runs on every evaluation
        if kind is str or kind is bytes:
            total += 1 + len(value) // TEXT_BYTES_PER_UNIT
        elif kind is dict:
            stack.extend(value.values())
            total += 1 + len(value)  # keys too; most are short text
        elif kind is list or kind is tuple:
            stack.extend(value)
            total += 1
        else:
            total += 1 + _other_weight(value, stack)
    return total


def _other_weight(value: Any, stack: list[Any]) -> int:
    """Subclasses of the containers and of text (rare); numbers, booleans and None weigh 0."""
    if isinstance(value, dict):
        stack.extend(value.values())
        return len(value)
    if isinstance(value, list | tuple):
        stack.extend(value)
    elif isinstance(value, str | bytes):
        return len(value) // TEXT_BYTES_PER_UNIT
    return 0


def result_size(value: Any, limit: int) -> int:
    """Roughly the bytes of a result (text by length, 8 per other value), or past `limit`."""
    if type(value) in _SCALARS:  # nearly every result: a condition, a key or a priority
        return len(value) if type(value) is str else 8
    total = 0
    stack = [value]
    while stack and total <= limit:
        item = stack.pop()
        total += len(item) if isinstance(item, str | bytes) else 8
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return total


def _largest_cheap_weight(references: int, loops: int) -> int:
    """The largest total weight w with (references + 1) * w^(1 + loops) <= MAX_CHEAP_WORK."""
    per_reference = MAX_CHEAP_WORK // (references + 1)
    root = int(per_reference ** (1 / (1 + loops)))
    while (root + 1) ** (1 + loops) <= per_reference:  # float roots may fall short by 1
        root += 1
    while root > 0 and root ** (1 + loops) > per_reference:
        root -= 1
    return min(root, MAX_CHEAP_WEIGHT)


def _loops(tree: Node) -> int:
    count = 0
    stack = [tree]
    while stack:
        node = stack.pop()
        if node.data in ("member_dot_arg", "ident_arg") and _called(node) in _LOOPS:
            count += 1
        stack.extend(child for child in node.children if isinstance(child, type(tree)))
    return count


def _called(node: Node) -> str:
    # `x.f(…)` names f after the receiver and the dot; `f(…)` names it first.
    return token_text(node, 1 if node.data == "member_dot_arg" else 0)


def _text_weight(size: int) -> int:
    return size // TEXT_BYTES_PER_UNIT
