"""Checking, compiling (cached) and evaluating one expression."""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from ._errors import EvaluationError, ExpressionError
from ._evaluate import compile_program, execute
from ._limits import length_problem, shape_problems
from ._parse import parse
from ._prune import Trie, build_trie, minimal_paths, prune
from ._references import find_references

CACHE_SIZE = 10_000  # ~1 KB per cached program (docs/architecture.md, Expressions)
_IDENTIFIER = re.compile(r"[_a-zA-Z][_a-zA-Z0-9]*")


@dataclass(frozen=True)
class Expression:
    """A checked, compiled expression. Build it with `compile_expression`."""

    source: str
    variables: frozenset[str]
    paths: tuple[tuple[str, ...], ...]  # minimal: no path extends another
    _program: Any = field(repr=False, compare=False)
    _trie: Trie = field(repr=False, compare=False)

    def evaluate(self, activation: Mapping[str, Any]) -> Any:
        """The plain Python result; raises EvaluationError. Only referenced fields are passed."""
        return execute(self._program, self.source, prune(activation, self._trie))

    def matches(self, activation: Mapping[str, Any]) -> bool:
        """True only when the result is exactly `true`; any error counts as no match."""
        try:
            return self.evaluate(activation) is True
        except EvaluationError:
            return False


def compile_expression(source: str, variables: Collection[str] = ("event",)) -> Expression:
    """Check and compile `source`; raises ExpressionError listing every problem."""
    return _compile(source, _variable_set(variables))


def check_expression(source: str, variables: Collection[str] = ("event",)) -> list[str]:
    """Every problem with `source`, each saying what is wrong and what is allowed; [] if fine."""
    try:
        _compile(source, _variable_set(variables))
    except ExpressionError as error:
        return list(error.problems)
    return []


@lru_cache(maxsize=CACHE_SIZE)
def _compile(source: str, variables: frozenset[str]) -> Expression:
    paths = _checked_paths(source, variables)
    program = compile_program(source)  # only text our own checks accepted reaches it
    return Expression(source, variables, paths, program, build_trie(paths))


def _checked_paths(source: str, variables: frozenset[str]) -> tuple[tuple[str, ...], ...]:
    too_long_or_empty = length_problem(source)
    if too_long_or_empty:
        raise ExpressionError(source, too_long_or_empty)  # never parse what is oversized
    tree = parse(source)
    references = find_references(tree, variables)
    problems = _unknown_names(references.unknown, variables) + shape_problems(tree)
    if problems:
        raise ExpressionError(source, *problems)
    return minimal_paths(references.paths)


def _unknown_names(unknown: list[str], variables: frozenset[str]) -> list[str]:
    names = " and ".join(f"`{name}`" for name in sorted(variables))
    allowed = f"only {names} may be referenced" if names else "no variables may be referenced"
    return [
        f"unknown identifier `{name}`; {allowed} "
        "(plus a comprehension's own loop variable inside it)"
        for name in dict.fromkeys(unknown)
    ]


def _variable_set(variables: Collection[str]) -> frozenset[str]:
    if isinstance(variables, str):
        raise TypeError("variables must be a collection of names, not one string")
    names = frozenset(variables)
    invalid = sorted(name for name in names if not _IDENTIFIER.fullmatch(name))
    if invalid:
        raise ValueError(f"variable names must be CEL identifiers; got {invalid}")
    return names
