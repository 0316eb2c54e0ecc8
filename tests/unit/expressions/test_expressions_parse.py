"""celpy's parser is used on our own terms: no shared state disturbed, no recursion-limit change."""

from __future__ import annotations

import sys

import pytest
from celpy.celparser import CELParser
from weir.expressions import compile_expression
from weir.expressions._parse import _build_parser, parse


def test_the_tree_is_a_plain_lark_tree() -> None:
    tree = parse("event.data.id == 1")
    assert tree.data == "expr"
    assert type(tree).__module__ == "lark.tree"


def test_building_our_parser_leaves_celpys_shared_parser_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sentinel = object()
    monkeypatch.setattr(CELParser, "CEL_PARSER", sentinel)
    ours = _build_parser()
    assert CELParser.CEL_PARSER is sentinel
    assert ours is not sentinel
    assert ours.parse("1 + 2").data == "expr"


def test_compiling_does_not_change_the_recursion_limit() -> None:
    before = sys.getrecursionlimit()
    compile_expression("event.data.parse_check_recursion_limit == 1")
    assert sys.getrecursionlimit() == before


def test_trees_thousands_of_levels_deep_are_walked_without_recursion() -> None:
    source = "+".join(["event.n"] * 500)  # ~1000 levels of addition in the tree
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(200)
    try:
        paths = compile_expression(source).paths
    finally:
        sys.setrecursionlimit(limit)
    assert paths == (("event", "n"),)
