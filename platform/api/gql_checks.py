"""What a GraphQL query may cost before it runs: its size in tokens, its cost in fields, and
where it is parsed and checked.

graphql-core's parser bounds the tokens (`max_lexical_tokens`, `max_comments`) and ariadne's
cost validator counts every field selected, fragments included as often as they are spread.
The cost is checked alone first: the spec's rules take time quadratic in the fields
(OverlappingFieldsCanBeMerged), so they run only on a query already known to be small. Both
run on threads of their own (`QUERIES`), not on the event loop.
"""

from typing import Any

from ariadne.validation import cost_validator
from graphql import DocumentNode, GraphQLError, GraphQLSchema, parse, specified_rules, validate
from weir.platform.foundation.bounded_pool import BoundedPool

MAX_TOKENS = 2000  # the SDK tooling's largest query (a run's trace) has a few hundred
MAX_COMMENTS = 100
MAX_COST = 200  # fields selected, each spread of a fragment counted again (a trace: ~30)
QUERIES = BoundedPool("GraphQL queries", workers=1, waiting=32)


class QueryRefused(ValueError):
    def __init__(self, errors: list[GraphQLError]) -> None:
        super().__init__("; ".join(e.message for e in errors))
        self.errors = errors


def checked(schema: GraphQLSchema, query: str, variables: Any) -> DocumentNode:
    """The query parsed and validated, or QueryRefused saying why and what is allowed."""
    try:
        document = parse(query, max_lexical_tokens=MAX_TOKENS, max_comments=MAX_COMMENTS)
    except GraphQLError as exc:
        raise QueryRefused([_with_limits(exc)]) from None
    given = variables if isinstance(variables, dict) else None
    cost = cost_validator(maximum_cost=MAX_COST, default_cost=1, variables=given)
    # Arguments the cost pass cannot read (a variable of the wrong type) are execution's to
    # report, as it does for every query: only the cost's own verdict is kept from it.
    over = [e for e in validate(schema, document, [cost]) if e.original_error is None]
    errors = over or validate(schema, document, specified_rules)
    if errors:
        raise QueryRefused(list(errors))
    return document


def already_checked(*_: Any, **__: Any) -> list[GraphQLError]:
    """ariadne's validation step, for a document `checked` has validated already."""
    return []


def _with_limits(exc: GraphQLError) -> GraphQLError:
    if "tokens" in exc.message or "comments" in exc.message:
        allowed = f" (at most {MAX_TOKENS} tokens and {MAX_COMMENTS} comments)"
        return GraphQLError(exc.message + allowed)
    return exc
