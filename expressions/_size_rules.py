"""Limits on an expression's size and shape, so that no expression can crash or stall us.

Measured on the Rust evaluator (docs/architecture.md, Expressions): very long operator chains and
member chains overflow its stack (SIGSEGV at 20k terms; fine at 10k), deep nesting is rejected by
its parser only beyond ~96 levels (and crashes it at 100k), and comprehensions nested in one
another multiply their cost (exponential strings, 10^9 iterations). The byte limit bounds the
chains far below the crash point; the rest is checked on the parse tree here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from weir.expressions._tree import COMPREHENSIONS, Node, comprehension_name, subtrees

MAX_EXPRESSION_BYTES = 4096
MAX_NESTING = 32  # levels of (), [], {}, call arguments, indexes and ternaries
MAX_COMPREHENSIONS = 2

_MACROS = ", ".join(sorted(COMPREHENSIONS))


def length_problem(source: str) -> str | None:
    size = len(source.encode("utf-8"))
    if size > MAX_EXPRESSION_BYTES:
        return f"it is {size} bytes long; at most {MAX_EXPRESSION_BYTES} bytes are allowed"
    if not source.strip():
        return "it is empty; write a CEL expression such as `event.data.id`"
    return None


@dataclass
class _Shape:
    deepest: int = 0
    comprehensions: int = 0
    problems: list[str] = field(default_factory=list)


def shape_problems(tree: Node) -> list[str]:
    """Every limit the parsed expression breaks, each naming what is allowed."""
    shape = _Shape()
    stack: list[tuple[Node, int, str | None]] = [(tree, -1, None)]  # top level is 0
    while stack:
        node, depth, enclosing = stack.pop()
        depth += node.data == "expr"  # every nested construct opens a new `expr`
        shape.deepest = max(shape.deepest, depth)
        inner = _visit(node, enclosing, shape)
        stack.extend(_children(node, depth, enclosing, inner))
    return _summary(shape)


def _visit(node: Node, enclosing: str | None, shape: _Shape) -> str | None:
    """Record what `node` itself breaks; return the comprehension its arguments are inside."""
    unsupported = _unsupported(node)
    if unsupported:
        shape.problems.append(unsupported)
    name = comprehension_name(node)
    if name is None:
        return enclosing
    shape.comprehensions += 1
    if enclosing is not None:
        shape.problems.append(
            f"`{name}(…)` is nested inside `{enclosing}(…)`; comprehension macros "
            f"({_MACROS}) may not be nested in one another"
        )
    return name


def _children(
    node: Node, depth: int, enclosing: str | None, inner: str | None
) -> list[tuple[Node, int, str | None]]:
    # A comprehension's receiver is evaluated once, outside the loop: only its arguments
    # (the loop variable and body) count as "inside" it.
    return [
        (child, depth, inner if child.data == "exprlist" else enclosing)
        for child in reversed(subtrees(node))
    ]


def _unsupported(node: Node) -> str | None:
    if node.data == "member_object":
        return 'object construction `Name{…}` is not supported; use a map literal `{"key": …}`'
    if node.data in ("dot_ident", "dot_ident_arg"):
        return "a leading dot (`.name`) is not supported; write the name without the dot"
    return None


def _summary(shape: _Shape) -> list[str]:
    problems = []
    if shape.deepest > MAX_NESTING:
        problems.append(
            f"it nests {shape.deepest} levels deep; at most {MAX_NESTING} levels of "
            "parentheses, brackets, braces, call arguments, indexes and ternaries are allowed"
        )
    if shape.comprehensions > MAX_COMPREHENSIONS:
        problems.append(
            f"it uses {shape.comprehensions} comprehension macros; at most "
            f"{MAX_COMPREHENSIONS} ({_MACROS}) are allowed in one expression"
        )
    return problems + list(dict.fromkeys(shape.problems))
