"""Small facts about celpy's parse tree shared by the limit checks and the reference finder.

The grammar (celpy/cel.lark) nests one rule per precedence level, so a bare `x` is
expr > conditionalor > conditionaland > relation > addition > multiplication > unary > member
> primary > ident. Member chains are left-recursive: `a.b[0]` is
member(member_index(member(member_dot(member(primary(ident a)), b)), expr 0)).
Trees can be thousands of levels deep (`1+1+…`), so callers walk them with explicit stacks.
"""

from __future__ import annotations

from typing import TypeAlias

from lark import Token, Tree

Node: TypeAlias = Tree[Token]  # a parse-tree node; its leaves are tokens

COMPREHENSIONS = frozenset({"all", "exists", "exists_one", "map", "filter"})

# Rules whose only child, when they have one, is the next precedence level down.
_PASS_THROUGH = frozenset(
    {"expr", "conditionalor", "conditionaland", "relation", "addition", "multiplication"}
    | {"unary", "member", "primary"}
)


def subtrees(node: Node) -> list[Node]:
    """The child rules of `node`, skipping its tokens."""
    return [child for child in node.children if isinstance(child, Tree)]


def token_text(node: Node, index: int) -> str:
    child = node.children[index]
    assert isinstance(child, Token)
    return str(child)


def bare_ident(node: Node) -> str | None:
    """The name if `node` is nothing but one identifier (a comprehension's variable)."""
    while node.data in _PASS_THROUGH and len(node.children) == 1:
        child = node.children[0]
        if not isinstance(child, Tree):
            return None
        node = child
    return token_text(node, 0) if node.data == "ident" else None


def call_arguments(node: Node) -> list[Node]:
    """The argument expressions of a call node (`f(…)` or `x.f(…)`); [] when it has none."""
    lists = [child for child in subtrees(node) if child.data == "exprlist"]
    return subtrees(lists[0]) if lists else []


def comprehension_name(node: Node) -> str | None:
    """`exists` for `x.exists(…)`, and so on; None for anything else."""
    if node.data != "member_dot_arg":
        return None
    name = token_text(node, 1)
    return name if name in COMPREHENSIONS else None
