"""Documents (JSON objects given as bytes) evaluated by the workers: parsed there, kept by key."""

from collections.abc import Iterator

import orjson
import pytest
from weir.expressions import Budget, Document, compile_expression, configure_budget
from weir.expressions._pool import POOL

EVENT = {"name": "e", "data": {"x": [1, 2, 3], "s": "a"}, "id": "i1"}


@pytest.fixture(autouse=True)
def roomy_budget() -> Iterator[Budget]:
    """Results are compared: on a loaded machine a worker may be slow to answer."""
    budget = Budget(time_ms=10_000)
    previous = configure_budget(budget)
    assert POOL.wait_until_ready(budget)
    yield budget
    configure_budget(previous)


def _document(key: str) -> Document:
    return Document(key, orjson.dumps(EVENT), {"name": "e", "id": "i1"}, tuple(EVENT))


def test_a_document_is_evaluated_from_its_bytes_without_parsing_here() -> None:
    document = _document("doc-1")
    expression = compile_expression("event.data.x.map(i, i * 2)")
    assert not expression.is_cheap({"event": document})
    assert expression.evaluate({"event": document}) == [2, 4, 6]
    assert expression.evaluate({"event": document}) == [2, 4, 6]  # kept by the worker
    assert dict.__len__(document) == 2  # only the known fields: never parsed in this process


def test_reading_only_known_fields_stays_in_process() -> None:
    expression = compile_expression('event.name + "/" + event.id')
    document = _document("doc-2")
    assert expression.is_cheap({"event": document})
    assert expression.evaluate({"event": document}) == "e/i1"


def test_a_worker_that_lost_a_document_is_sent_it_again() -> None:
    with POOL._lock:
        for worker in POOL._idle:  # each believes it keeps a document it never got
            worker.documents["doc-lost"] = None
    expression = compile_expression('event.data.s + "!"')
    assert expression.evaluate({"event": _document("doc-lost")}) == "a!"
