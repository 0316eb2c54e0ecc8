"""Evaluating over a JSON object another process already holds parsed.

The process that parses and checks a large event (Weir's ingest worker) keeps it parsed and
evaluates admission's expressions on it, so the event is parsed once and an evaluation's clock
starts as soon as the event is checked, instead of after its bytes went to a pool worker and
were parsed there again.

Both sides use the pool worker's own code: the asker frames the request a pool worker takes,
naming the object by key without its bytes (`evaluate_held`), and the holder answers it with
`_worker`'s answer under the memory budget (`answer_held`). So results and error reasons are
those the same object sent as bytes to a pool worker gets. The asker keeps the time budget:
past it, it stops the holder (kills the process), as the pool does its workers.
"""

from __future__ import annotations

import resource
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from . import _worker
from ._budget import current_budget
from ._errors import BudgetExceeded
from ._expression import Expression
from ._pool import _outcome, _stopped_reason

# (memory budget in bytes, the pool worker's request): what the holder gets.
HeldRequest = tuple[int, tuple[Any, ...]]
# Sends a request to the holder and returns its (verdict, payload) by the deadline
# (time.monotonic()), or raises HolderStopped.
Exchange = Callable[[HeldRequest, float], tuple[str, Any]]


class HolderStopped(Exception):
    """The holder ran out of time (and was stopped) or died (its memory budget)."""

    def __init__(self, what: str) -> None:
        super().__init__(what)
        self.what = what  # "time" or "died", as the pool words them


class NotHeld(Exception):
    """The holder cannot evaluate this expression (it reads a field the holder lacks, or the
    holder no longer has the object): the caller evaluates it the usual way."""


def reads(expression: Expression, variable: str, name: str) -> bool:
    """Whether `expression` reads the top-level field `name` of `variable` (or all of it)."""
    if variable not in expression._trie:
        return False
    trie = expression._trie[variable]
    return trie is None or name in trie


def evaluate_held(expression: Expression, variable: str, key: str, exchange: Exchange) -> Any:
    """`expression.evaluate({variable: the object held as key})` in the holder, under the
    current budget; raises EvaluationError or BudgetExceeded as `evaluate` would."""
    if expression.variables - {variable}:
        raise NotHeld(f"{expression.source!r} reads more than {variable!r}")
    budget = current_budget()
    documents = ((variable, key, None, expression._trie[variable]),)
    request = (expression.source, budget.result_bytes, "json", b"{}", documents)
    deadline = time.monotonic() + budget.time_ms / 1000
    try:
        verdict, payload = exchange((budget.memory_bytes, request), deadline)
    except HolderStopped as stop:
        raise BudgetExceeded(expression.source, _stopped_reason(stop.what, budget)) from None
    if verdict == "missing":
        raise NotHeld(f"the holder no longer has {key!r}")
    return _outcome(expression.source, verdict, payload, budget)


_programs: dict[str, Any] = {}  # the holder's compiled programs, as a pool worker keeps them


def answer_held(held: OrderedDict[str, Any], request: HeldRequest) -> bytes:
    """The holder's framed answer to `request` over the objects it holds (key -> value)."""
    memory_bytes, worker_request = request
    if len(_programs) >= _worker.MAX_PROGRAMS:
        _programs.clear()
    with _address_space_cap(memory_bytes):
        return _worker._answer(_programs, held, worker_request)


@contextmanager
def _address_space_cap(extra_bytes: int) -> Iterator[None]:
    """At most `extra_bytes` more address space meanwhile: a runaway allocation of the
    evaluator aborts this process (the asker reports the memory budget), as in a pool
    worker; Python's own allocations fail with MemoryError, which the answer reports."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = _address_space() + extra_bytes
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def _address_space() -> int:
    """This process's address space in bytes (Linux); 0 elsewhere, so the cap is the
    budget alone, as in a pool worker."""
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            return int(statm.read().split()[0]) * resource.getpagesize()
    except OSError:
        return 0
