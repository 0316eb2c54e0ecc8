"""What an expression refers to: its variables' member paths, and any unknown identifiers.

A path is the run of `.field` selections after a variable, e.g. `event.data.id` ->
("event", "data", "id"). It stops at an index (`[…]`) or a method call (`.startsWith(…)`),
because what is selected there depends on run-time values: the evaluator then needs the whole
sub-object. Comprehension variables (`i` in `items.exists(i, …)`) are scoped to the macro's
arguments and may shadow a variable there.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from weir.expressions._tree import (
    Node,
    bare_ident,
    call_arguments,
    comprehension_name,
    subtrees,
    token_text,
)

Path = tuple[str, ...]

# CEL's type names are identifiers too (`type(x) == int`); they name no data.
TYPE_NAMES = frozenset(
    {"bool", "bytes", "double", "int", "list", "map", "null_type", "string", "type", "uint"}
)


@dataclass
class References:
    paths: list[Path] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)


def find_references(tree: Node, variables: frozenset[str]) -> References:
    found = References()
    stack: list[tuple[Node, frozenset[str]]] = [(tree, frozenset())]
    while stack:
        node, bound = stack.pop()
        if node.data == "member":
            stack.extend(_member_chain(node, bound, variables, found))
        else:
            stack.extend((child, bound) for child in reversed(subtrees(node)))
    return found


def _member_chain(
    node: Node, bound: frozenset[str], variables: frozenset[str], found: References
) -> list[tuple[Node, frozenset[str]]]:
    """Record the path of a whole member chain; return the sub-trees still to visit."""
    links, root = _unwind(node)
    pending: list[tuple[Node, frozenset[str]]] = []
    name = _root_ident(root)
    if name is None:
        pending.append((root, bound))
    elif name in variables and name not in bound:
        found.paths.append((name, *_selected_fields(links)))
    elif name not in bound and name not in TYPE_NAMES:
        found.unknown.append(name)
    for link in links:
        pending.extend(_link_arguments(link, bound))
    return pending


def _unwind(node: Node) -> tuple[list[Node], Node]:
    """The links of a member chain, outermost variable first, and the primary it starts at."""
    links: list[Node] = []
    while node.data == "member":
        link = subtrees(node)[0]
        if link.data == "primary":
            return links[::-1], link
        links.append(link)
        node = subtrees(link)[0]
    return links[::-1], node


def _root_ident(primary: Node) -> str | None:
    inner = subtrees(primary)[0]
    return token_text(inner, 0) if inner.data == "ident" else None


def _selected_fields(links: list[Node]) -> list[str]:
    selected = []
    for link in links:
        if link.data != "member_dot":
            break
        selected.append(token_text(link, 1))
    return selected


def _link_arguments(link: Node, bound: frozenset[str]) -> list[tuple[Node, frozenset[str]]]:
    """Index expressions and call arguments, with a comprehension's variable bound in its body."""
    if link.data == "member_dot":
        return []
    arguments = subtrees(link)[1:] if link.data == "member_index" else call_arguments(link)
    loop_variable = bare_ident(arguments[0]) if arguments else None
    if comprehension_name(link) is None or loop_variable is None:
        return [(argument, bound) for argument in arguments]
    return [(argument, bound | {loop_variable}) for argument in arguments[1:]]
