"""Evaluating over a JSON object another process already holds parsed.

The process that parses and checks a large event (Weir's ingest worker) keeps it parsed and
evaluates admission's expressions on it, so the event is parsed once, instead of again after
its bytes went to a pool worker. As in a pool worker, where the first evaluation on a document
parses it, the time since the holder had the bytes counts toward the first evaluation's budget
(`spent_ms`), so a costly expression is given up on a budget after the body arrived, not a
budget after a parse; that evaluation still has at least a quarter of the budget.

Both sides use the pool worker's own code: the asker frames the request a pool worker takes,
naming the object by key without its bytes (`evaluate_held`), and the holder answers it with
`_worker`'s answer (`answer_held`). So results and error reasons are those the same object
sent as bytes to a pool worker gets. The holder evaluates each request in a child process it
forks (`answer_held_forked`): the child shares the parsed object without a copy, caps its own
memory and is killed at the time budget, and the holder lives on for the next request. The
asker waits a little longer than the budget, then stops the holder itself.
"""

from __future__ import annotations

import os
import resource
import select
import signal
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any

import cel
from weir.expressions import _worker
from weir.expressions._budget import current_budget
from weir.expressions._errors import BudgetExceeded
from weir.expressions._expression import Expression
from weir.expressions._pool import _outcome, _stopped_reason

# (time budget in ms, memory budget in bytes, the pool worker's request): what the holder gets.
HeldRequest = tuple[int, int, tuple[Any, ...]]
HEADER_BYTES = _worker.HEADER_BYTES  # of a framed answer: its length, big-endian
# How much longer than the time budget the asker waits for the holder's own verdict.
GRACE_MS = 1000
# The least share of the time budget an evaluation has, however long the parse before it took.
FLOOR_SHARE = 0.25
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
    deadline = time.monotonic() + (budget.time_ms + GRACE_MS) / 1000
    try:
        verdict, payload = exchange((budget.time_ms, budget.memory_bytes, request), deadline)
    except HolderStopped as stop:
        verdict, payload = "stopped", stop.what
    if verdict == "stopped":
        raise BudgetExceeded(expression.source, _stopped_reason(payload, budget)) from None
    if verdict == "missing":
        raise NotHeld(f"the holder no longer has {key!r}")
    return _outcome(expression.source, verdict, payload, budget)


_programs: dict[str, Any] = {}  # the holder's compiled programs, as a pool worker keeps them


def answer_held(held: OrderedDict[str, Any], request: HeldRequest) -> bytes:
    """The framed answer to `request` over the objects held (key -> value), evaluated here
    under the memory budget (a runaway allocation aborts this process) but not the time one."""
    _, memory_bytes, worker_request = request
    if len(_programs) >= _worker.MAX_PROGRAMS:
        _programs.clear()
    with _address_space_cap(memory_bytes):
        return _worker._answer(_programs, held, worker_request)


def answer_held_forked(
    held: OrderedDict[str, Any], request: HeldRequest, spent_ms: float = 0.0
) -> bytes:
    """`answer_held` in a forked child, killed past the time budget less `spent_ms` (at least
    FLOOR_SHARE of it); a child that died or was killed gives ("stopped", "died" or "time"),
    which `evaluate_held` words as the pool does. The caller must be single-threaded (it
    forks)."""
    started = time.monotonic()
    time_ms = time_left_ms(request[0], spent_ms)
    source = request[2][0]
    if len(_programs) >= _worker.MAX_PROGRAMS:
        _programs.clear()
    if source not in _programs:  # compiled once here, so every child has it
        with suppress(BaseException):  # a refusal is the child's to word, as a worker does
            _programs[source] = cel.compile(source)
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: answer, and leave without running anything of the parent's
        status = 1
        try:
            os.close(read_end)
            left = memoryview(answer_held(held, request))
            while left:
                left = left[os.write(write_end, left) :]
            status = 0
        finally:
            os._exit(status)
    os.close(write_end)
    try:
        answer = _read_all(read_end, started + time_ms / 1000)  # the fork's time counts
    except TimeoutError:
        os.kill(pid, signal.SIGKILL)
        answer = _worker.frame(("stopped", "time"))
    finally:
        os.close(read_end)
    if not _whole(answer):  # it ended before it answered: its memory cap aborted it
        answer = _worker.frame(("stopped", "died"))
    _reap_later(pid)
    return answer


def time_left_ms(budget_ms: int, spent_ms: float) -> float:
    """The time an evaluation has when `spent_ms` of its budget went before it (a parse)."""
    return max(budget_ms - spent_ms, budget_ms * FLOOR_SHARE)


def _whole(answer: bytes) -> bool:
    header = _worker.HEADER_BYTES
    return len(answer) >= header and len(answer) == header + int.from_bytes(answer[:header], "big")


def _read_all(fd: int, deadline: float) -> bytes:
    chunks: list[bytes] = []
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            raise TimeoutError
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


_children: list[int] = []


def _reap_later(pid: int) -> None:
    """Reap the children that have exited, without waiting: a killed child with a large heap
    takes a while to go, and the answer should not wait for it."""
    _children.append(pid)
    for child in list(_children):
        done, _ = os.waitpid(child, os.WNOHANG)
        if done:
            _children.remove(child)


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
