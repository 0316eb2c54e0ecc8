"""Checking, compiling (cached) and evaluating one expression."""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from weir.expressions._budget import Budget, current_budget
from weir.expressions._cost import StaticCost, is_cheap, result_size, static_cost, weight
from weir.expressions._document import Document
from weir.expressions._errors import BudgetExceeded, EvaluationError, ExpressionError
from weir.expressions._evaluate import compile_program, execute
from weir.expressions._parse import parse
from weir.expressions._pool import POOL, DocumentUse
from weir.expressions._prune import Trie, build_trie, minimal_paths, prune
from weir.expressions._references import find_references
from weir.expressions._selector import NOT_PLAIN, path_of, select
from weir.expressions._size_rules import length_problem, shape_problems

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
    _cost: StaticCost = field(repr=False, compare=False)
    # The field path the expression is nothing but, answered by lookups (`_selector`).
    _path: tuple[str, ...] | None = field(default=None, repr=False, compare=False)

    def evaluate(self, activation: Mapping[str, Any]) -> Any:
        """The plain Python result; raises EvaluationError. Only referenced fields are passed.

        Runs in-process when the cost model proves it cheap (plain keys and conditions over
        small values: microseconds); otherwise in a worker process under the budget (see
        `_budget`), raising BudgetExceeded when it runs out of time, memory or result size.
        """
        budget = current_budget()
        if self._path is not None:
            found = select(activation, self._path)
            if found is not NOT_PLAIN and self._cheap_leaf(found, budget):
                return found
        documents = self._documents(activation)
        if documents:  # reads past a Document's known fields: only a worker parses it
            named = {name for name, _, _ in documents}
            rest = prune({k: v for k, v in activation.items() if k not in named}, self._trie)
            return POOL.evaluate(self.source, rest, budget, documents)
        pruned = prune(activation, self._trie)
        if not is_cheap(self._cost, pruned):
            return POOL.evaluate(self.source, pruned, budget)
        result = execute(self._program, self.source, pruned)
        if result_size(result, budget.result_bytes) > budget.result_bytes:
            # Cheap to make (a few ms at most) but still too big to key or store.
            raise BudgetExceeded(self.source, _too_big(budget))
        return result

    def _cheap_leaf(self, value: Any, budget: Budget) -> bool:
        """Whether the evaluator would have run in-process and kept `value`: the activation it
        gets, pruned to the path, is a single-entry dict per level (weight 2 each) and the
        value (`is_cheap`), and the value fits the result budget."""
        assert self._path is not None
        room = self._cost.cheap_weight - self._cost.literal_weight - 2 * (len(self._path) - 1)
        fits = result_size(value, budget.result_bytes) <= budget.result_bytes
        return weight((value,), room) <= room and fits

    def is_cheap(self, activation: Mapping[str, Any]) -> bool:
        """Whether `evaluate` would run in-process: cheap to ask (microseconds at any size)."""
        return not self._documents(activation) and is_cheap(
            self._cost, prune(activation, self._trie)
        )

    def _documents(self, activation: Mapping[str, Any]) -> tuple[DocumentUse, ...]:
        """The Documents this expression reads past the fields they know without parsing."""
        found = []
        for name, value in activation.items():
            if not isinstance(value, Document) or name not in self._trie:
                continue
            trie = self._trie[name]
            if trie is None or not all(value.knows(field) for field in trie):
                found.append((name, value, trie))
        return tuple(found)

    def matches(self, activation: Mapping[str, Any]) -> bool:
        """True only when the result is exactly `true`; an error counts as no match, but an
        exceeded budget is raised (BudgetExceeded): the caller must say why it refused."""
        try:
            return self.evaluate(activation) is True
        except BudgetExceeded:
            raise
        except EvaluationError:
            return False


def _too_big(budget: Budget) -> str:
    return f"its result is larger than the result size budget of {budget.result_bytes} bytes"


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
    paths, cost = _checked_paths(source, variables)
    program = compile_program(source)  # only text our own checks accepted reaches it
    POOL.warm(current_budget())  # so a later costly evaluation need not wait for a start
    path = path_of(source)
    plain = path if path is not None and paths == (path,) else None
    return Expression(source, variables, paths, program, build_trie(paths), cost, plain)


def _checked_paths(
    source: str, variables: frozenset[str]
) -> tuple[tuple[tuple[str, ...], ...], StaticCost]:
    too_long_or_empty = length_problem(source)
    if too_long_or_empty:
        raise ExpressionError(source, too_long_or_empty)  # never parse what is oversized
    tree = parse(source)
    references = find_references(tree, variables)
    problems = _unknown_names(references.unknown, variables) + shape_problems(tree)
    if problems:
        raise ExpressionError(source, *problems)
    cost = static_cost(tree, len(references.paths), source)
    return minimal_paths(references.paths), cost


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
