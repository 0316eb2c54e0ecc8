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

from ._tree import COMPREHENSIONS, Node, token_text

MAX_CHEAP_WEIGHT = 256  # ~0.5 ms of conversion at worst
MAX_CHEAP_WORK = 1 << 16  # (references + 1) x weight^(1 + loops): a few ms at worst
TEXT_BYTES_PER_UNIT = 64

_LOOPS = COMPREHENSIONS | {"matches"}


@dataclass(frozen=True)
class StaticCost:
    references: int  # member chains rooted at a variable, each occurrence counted
    loops: int  # comprehensions, plus `matches` calls
    literal_weight: int  # the source's own text, as weight


def static_cost(tree: Node, references: int, source: str) -> StaticCost:
    return StaticCost(references, _loops(tree), _text_weight(len(source.encode("utf-8"))))


def is_cheap(cost: StaticCost, activation: dict[str, Any]) -> bool:
    """True only when the evaluation is bounded to a few milliseconds and a small result."""
    budget = _largest_cheap_weight(cost)
    if budget < 1:
        return False
    return cost.literal_weight + weight(activation.values(), budget) <= budget


def weight(values: Iterable[Any], limit: int) -> int:
    """The weight of `values`, or anything above `limit` once it is known to pass it."""
    total = 0
    stack = list(values)
    while stack and total <= limit:
        value = stack.pop()
        total += 1
        if isinstance(value, dict):
            stack.extend(value.values())
            total += len(value)  # keys too; most are short text
        elif isinstance(value, list | tuple):
            stack.extend(value)
        elif isinstance(value, str | bytes):
            total += _text_weight(len(value))
    return total


def result_size(value: Any, limit: int) -> int:
    """Roughly the bytes of a result (text by length, 8 per other value), or past `limit`."""
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


def _largest_cheap_weight(cost: StaticCost) -> int:
    """The largest total weight w with (references + 1) * w^(1 + loops) <= MAX_CHEAP_WORK."""
    per_reference = MAX_CHEAP_WORK // (cost.references + 1)
    root = int(per_reference ** (1 / (1 + cost.loops)))
    while (root + 1) ** (1 + cost.loops) <= per_reference:  # float roots may fall short by 1
        root += 1
    while root > 0 and root ** (1 + cost.loops) > per_reference:
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
