"""Parse CEL text into a tree with celpy's pure-Python (Lark LALR) parser.

celpy keeps one parser per process in `CELParser.CEL_PARSER`, and its tree class is whatever the
first user asked for. We build a private instance once (standard `lark.Tree` nodes) and put the
shared slot back as we found it, so other celpy users and we never see each other's trees.
`celpy.Environment` is avoided on purpose: it changes the process-wide recursion limit.
"""

from __future__ import annotations

import threading

import lark
from celpy.celparser import CELParser
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken
from weir.expressions._errors import ExpressionError
from weir.expressions._tree import Node

_lock = threading.Lock()
_parser: lark.Lark | None = None


def parse(source: str) -> Node:
    """The syntax tree of `source`; raises ExpressionError describing a syntax error."""
    try:
        return _private_parser().parse(source)
    except UnexpectedInput as error:
        raise ExpressionError(source, _describe(source, error)) from None
    except lark.exceptions.LarkError as error:
        raise ExpressionError(source, f"syntax error: {error}") from None


def _private_parser() -> lark.Lark:
    global _parser
    with _lock:
        if _parser is None:
            _parser = _build_parser()
        return _parser


def _build_parser() -> lark.Lark:
    shared = CELParser.CEL_PARSER
    CELParser.CEL_PARSER = None
    try:
        ours = CELParser(tree_class=lark.Tree)
        built: lark.Lark | None = type(ours).CEL_PARSER
    finally:
        CELParser.CEL_PARSER = shared
    assert built is not None
    return built


def _describe(source: str, error: UnexpectedInput) -> str:
    where = f"line {error.line}, column {error.column}"
    context = error.get_context(source, span=30).rstrip("\n")
    return f"syntax error at {where}: unexpected {_unexpected(error)}; not valid CEL\n{context}"


def _unexpected(error: UnexpectedInput) -> str:
    if isinstance(error, UnexpectedToken):
        token = error.token
        return "end of expression" if token.type == "$END" else repr(str(token))
    if isinstance(error, UnexpectedCharacters):
        return f"character {error.char!r}"
    return "input"
