"""CEL for Weir: check and compile expressions (cached), evaluate them, turn results into keys.

celpy's pure-Python parser is the front end: every expression is parsed and checked (size,
nesting, comprehensions, which variables it may name) before the Rust evaluator (`cel`) ever
sees it, and the tree tells which fields it reads so each evaluation gets only those.
Every evaluation is bounded: a cost model runs provably cheap ones in-process and the rest in
supervised worker processes under a time, memory and result-size budget (`Budget`).
Large JSON objects may be given as bytes (`Document`): only a worker process parses them, or
a process that holds them parsed already evaluates over them (`held`).
This package knows nothing of the platform.
"""

from weir.expressions._budget import Budget, configure_budget, current_budget
from weir.expressions._comparisons import (
    Comparison,
    LiteralKind,
    literal_comparisons,
    required_comparisons,
)
from weir.expressions._document import Document
from weir.expressions._errors import BudgetExceeded, EvaluationError, ExpressionError
from weir.expressions._expression import Expression, check_expression, compile_expression
from weir.expressions._keys import key_hash, stable_key
from weir.expressions._size_rules import MAX_EXPRESSION_BYTES
from weir.expressions.held import NotHeld

__all__ = [
    "MAX_EXPRESSION_BYTES",
    "Budget",
    "BudgetExceeded",
    "Comparison",
    "Document",
    "EvaluationError",
    "Expression",
    "ExpressionError",
    "LiteralKind",
    "NotHeld",
    "check_expression",
    "compile_expression",
    "configure_budget",
    "current_budget",
    "key_hash",
    "literal_comparisons",
    "required_comparisons",
    "stable_key",
]
