"""The comparisons of a field path with a literal (`status == "FAILED"`, `3 < attempt`), read
off the parse tree, so a caller that knows its fields' types can refuse one that can never
hold (`status == 1`) before evaluating anything. Only these plain shapes are reported."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from lark import Token, Tree
from weir.expressions._parse import parse
from weir.expressions._tree import Node, subtrees

_RELATIONS = {
    "relation_eq": "==",
    "relation_ne": "!=",
    "relation_lt": "<",
    "relation_le": "<=",
    "relation_gt": ">",
    "relation_ge": ">=",
}
_WRAPPERS = frozenset({"relation", "addition", "multiplication", "unary", "member", "primary"})


class LiteralKind(StrEnum):
    STRING = "string"
    BYTES = "bytes"
    INT = "int"
    UINT = "uint"
    DOUBLE = "double"
    BOOL = "bool"
    NULL = "null"


@dataclass(frozen=True)
class Comparison:
    path: tuple[str, ...]
    operator: str
    literal: str  # as written
    kind: LiteralKind


def literal_comparisons(source: str) -> list[Comparison]:
    """Each `path <op> literal` (either way round) in `source`; raises ExpressionError for
    text that does not parse."""
    found: list[Comparison] = []
    stack = [parse(source)]
    while stack:
        node = stack.pop()
        stack.extend(subtrees(node))
        found += _compared(node)
    return found


def required_comparisons(source: str) -> list[Comparison]:
    """The comparisons every true result needs: those that are the whole expression or one
    of its top-level `&&` terms (a caller may narrow what it evaluates on by them)."""
    node = parse(source)
    while node.data in ("expr", "conditionalor") and len(node.children) == 1:
        child = node.children[0]
        if not isinstance(child, Tree):
            return []
        node = child
    found: list[Comparison] = []
    stack = [node]
    while stack:
        term = stack.pop()
        if term.data == "conditionaland" and len(subtrees(term)) > 1:
            stack.extend(subtrees(term))
        elif term.data == "conditionaland" and len(subtrees(term)) == 1:
            found += _compared(subtrees(term)[0])
        else:
            found += _compared(term)
    return found


def _compared(node: Node) -> list[Comparison]:
    """The `path <op> literal` that `node` is, if it is one."""
    if node.data != "relation" or len(node.children) != 2:
        return []
    op_node, right = node.children
    if not isinstance(op_node, Tree) or op_node.data not in _RELATIONS:
        return []
    left = subtrees(op_node)[0] if subtrees(op_node) else None
    if left is None or not isinstance(right, Tree):
        return []
    found = []
    for side, other in ((left, right), (right, left)):
        path, literal = _path(side), _literal(other)
        if path is not None and literal is not None:
            found.append(Comparison(path, _RELATIONS[op_node.data], literal, _kind(literal)))
    return found


def _unwrapped(node: Node) -> Node:
    while node.data in _WRAPPERS and len(node.children) == 1 and isinstance(node.children[0], Tree):
        node = node.children[0]
    return node


def _path(node: Node) -> tuple[str, ...] | None:
    """`a.b.c` as ("a", "b", "c"), when the node is nothing but that path."""
    parts: list[str] = []
    node = _unwrapped(node)
    while node.data == "member_dot" and len(node.children) == 2:
        inner, name = node.children
        if not isinstance(inner, Tree) or not isinstance(name, Token):
            return None
        parts.append(str(name))
        node = _unwrapped(inner)
    if node.data != "ident" or not isinstance(node.children[0], Token):
        return None
    return (str(node.children[0]), *reversed(parts))


def _literal(node: Node) -> str | None:
    node = _unwrapped(node)
    if node.data != "literal" or not isinstance(node.children[0], Token):
        return None
    return str(node.children[0])


def _kind(text: str) -> LiteralKind:
    lowered = text.lower()
    if lowered[:1] in "\"'" or lowered[:2] in ('r"', "r'"):
        return LiteralKind.STRING
    if lowered[:1] == "b" and lowered[1:2] in "\"'r":
        return LiteralKind.BYTES
    if lowered in ("true", "false"):
        return LiteralKind.BOOL
    if lowered == "null":
        return LiteralKind.NULL
    if lowered.endswith("u"):
        return LiteralKind.UINT
    if not lowered.startswith("0x") and any(c in lowered for c in ".e"):
        return LiteralKind.DOUBLE
    return LiteralKind.INT
