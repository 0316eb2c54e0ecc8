"""Supervised worker processes for evaluations that are not provably cheap.

The caller waits on a pipe (without the GIL) for at most the time budget. A worker that runs
past it is killed; one that dies (its memory cap made the evaluator abort) is noticed at end of
file. Either way only that evaluation fails, with BudgetExceeded, and a replacement is started
in the background so the next caller does not wait for a process to start.

Large JSON objects go as bytes (`Document`), never as Python objects: encoding them would
hold the GIL in the caller's process. Each worker keeps the last few it parsed, and the pool
remembers which, so several evaluations over one event send and parse it once per worker.
"""

from __future__ import annotations

import atexit
import logging
import os
import pickle
import select
import subprocess
import sys
import threading
import time
from collections import OrderedDict
from typing import Any

import orjson
from weir.expressions import _worker
from weir.expressions._budget import Budget
from weir.expressions._document import Document
from weir.expressions._errors import BudgetExceeded, EvaluationError
from weir.expressions._worker import HEADER_BYTES, MAX_DOCUMENTS, READY, Trie, frame

# (variable, document, the part of the trie under that variable: None for all of it)
DocumentUse = tuple[str, Document, Trie | None]

log = logging.getLogger("weir.expressions")
STARTUP_SECONDS = 30.0  # a start takes ~50 ms; this only guards against a wedged machine


class _Stopped(Exception):
    """The worker ran out of time, or died; the message says which."""


class _Worker:
    def __init__(self, memory_bytes: int) -> None:
        self.memory_bytes = memory_bytes
        self.documents: OrderedDict[str, None] = OrderedDict()  # what it keeps, as it does
        self.process = subprocess.Popen(
            # -I: no current directory or PYTHON* variables; the script imports only `cel`.
            [sys.executable, "-I", _worker.__file__, str(memory_bytes)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,  # the evaluator's own out-of-memory message
            close_fds=True,
            process_group=0,  # a Ctrl-C signals Weir alone: evaluations go on while it drains
        )
        try:
            ready = self._read(len(READY), time.monotonic() + STARTUP_SECONDS)
        except _Stopped as stop:
            self.stop()
            raise OSError(f"an expression worker did not start: {stop}") from None
        if ready != READY:
            self.stop()
            raise OSError(f"an expression worker said {ready!r} instead of being ready")

    def ask(self, request: bytes, deadline: float) -> Any:
        assert self.process.stdin is not None
        self.process.stdin.write(request)  # the worker reads as fast as we write
        self.process.stdin.flush()
        header = self._read(HEADER_BYTES, deadline)
        body = self._read(int.from_bytes(header, "big"), deadline)
        return pickle.loads(body)  # only our own worker's answers are unpickled

    def _read(self, size: int, deadline: float) -> bytes:
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        chunks: list[bytes] = []
        while size > 0:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise _Stopped("time")
            chunk = os.read(fd, min(size, 1 << 20))
            if not chunk:
                raise _Stopped("died")
            chunks.append(chunk)
            size -= len(chunk)
        return b"".join(chunks)

    def stop(self) -> int | None:
        """Kill the process; its exit status (negative: the signal that ended it)."""
        if self.process.poll() is None:
            self.process.kill()
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                stream.close()
        return self.process.wait()


class WorkerPool:
    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._idle: list[_Worker] = []
        self._count = 0  # idle, busy and starting
        self._starting = 0
        self.stopped = 0  # workers killed or dead: what a test or a metric may look at
        atexit.register(self.close)

    def warm(self, budget: Budget) -> None:
        """Start one worker in the background unless one exists."""
        with self._lock:
            if not self._count:
                self._spawn(budget)

    def wait_until_ready(self, budget: Budget, timeout: float = STARTUP_SECONDS) -> bool:
        """Wait for an idle worker under `budget`, starting one if needed (tests, startup)."""
        end = time.monotonic() + timeout
        with self._lock:
            while True:
                for worker in [w for w in self._idle if w.memory_bytes != budget.memory_bytes]:
                    self._idle.remove(worker)
                    self._replace(worker, budget)
                if self._idle:
                    return True
                if self._count < budget.workers and not self._starting:
                    self._spawn(budget)
                if not self._lock.wait(max(0.0, end - time.monotonic())):
                    return False

    def evaluate(
        self,
        source: str,
        activation: dict[str, Any],
        budget: Budget,
        documents: tuple[DocumentUse, ...] = (),
    ) -> Any:
        """Evaluate in a worker; `documents` are added to `activation` there, parsed from
        their bytes (and cut down to their tries)."""
        encoded = _encoded(source, activation)
        # Waiting for a free worker and the evaluation each get the time budget: a caller
        # waits at most twice it, and only when other costly evaluations fill the pool.
        worker = self._acquire(source, budget, time.monotonic() + budget.time_ms / 1000)
        deadline = time.monotonic() + budget.time_ms / 1000
        try:
            verdict, payload = worker.ask(
                _request(source, encoded, worker, documents, budget), deadline
            )
            if verdict == "missing":  # it no longer had a document: send them all again
                worker.documents.clear()
                request = _request(source, encoded, worker, documents, budget)
                verdict, payload = worker.ask(request, deadline)
        except (_Stopped, OSError) as stop:
            with self._lock:
                self.stopped += 1
            self._replace(worker, budget)
            raise BudgetExceeded(source, _stopped_reason(str(stop), budget)) from None
        self._release(worker)
        return _outcome(source, verdict, payload, budget)

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for worker in idle:
            worker.stop()

    def _acquire(self, source: str, budget: Budget, deadline: float) -> _Worker:
        """An idle worker; starts one in the background (never here) when the pool has room."""
        with self._lock:
            while not self._idle:
                if self._count < budget.workers and not self._starting:
                    self._spawn(budget)
                if not self._lock.wait(max(0.0, deadline - time.monotonic())):
                    raise BudgetExceeded(source, _no_worker(budget))
            worker = self._idle.pop()
        if worker.memory_bytes != budget.memory_bytes:  # the budget changed since it started
            self._replace(worker, budget)
            return self._acquire(source, budget, deadline)
        return worker

    def _spawn(self, budget: Budget) -> None:
        """Start one more worker in the background; call with the lock held."""
        self._count += 1
        self._starting += 1
        threading.Thread(target=self._add, args=(budget,), daemon=True).start()

    def _release(self, worker: _Worker) -> None:
        with self._lock:
            self._idle.append(worker)
            self._lock.notify()

    def _replace(self, worker: _Worker, budget: Budget) -> None:
        threading.Thread(target=self._swap, args=(worker, budget), daemon=True).start()

    def _swap(self, worker: _Worker, budget: Budget) -> None:
        worker.stop()
        with self._lock:
            self._count -= 1
            self._spawn(budget)

    def _add(self, budget: Budget) -> None:
        try:
            worker = _Worker(budget.memory_bytes)
        except OSError:
            log.exception("could not start an expression worker")
            with self._lock:
                self._count -= 1
                self._starting -= 1
                self._lock.notify_all()
            return
        with self._lock:
            self._starting -= 1
            self._idle.append(worker)
            self._lock.notify()


def _encoded(source: str, activation: dict[str, Any]) -> tuple[str, Any]:
    # The encoding holds the GIL (the event loop waits meanwhile): orjson is ~4x faster than
    # pickle on a 3 MiB value. Pickle covers what JSON cannot carry (big ints, CEL values).
    try:
        return ("json", orjson.dumps(activation))
    except (TypeError, orjson.JSONEncodeError):
        pass
    try:
        return ("pickle", pickle.dumps(activation, protocol=pickle.HIGHEST_PROTOCOL))
    except RecursionError:  # pickle recurses per level; only hostile data nests this deep
        raise BudgetExceeded(source, _TOO_DEEP) from None


def _request(
    source: str,
    encoded: tuple[str, Any],
    worker: _Worker,
    documents: tuple[DocumentUse, ...],
    budget: Budget,
) -> bytes:
    """The framed request; a document's bytes go only to a worker that does not keep it."""
    sent = []
    for variable, document, trie in documents:
        kept = document.key in worker.documents
        sent.append((variable, document.key, None if kept else document.raw, trie))
        worker.documents[document.key] = None
        worker.documents.move_to_end(document.key)
        while len(worker.documents) > MAX_DOCUMENTS:  # as the worker forgets them
            worker.documents.popitem(last=False)
    return frame((source, budget.result_bytes, *encoded, tuple(sent)))


_TOO_DEEP = "the values it reads are nested too deeply to evaluate under a budget"


def _no_worker(budget: Budget) -> str:
    return (
        f"no expression worker became free within its cost budget of {budget.time_ms} ms "
        "(other costly evaluations held or were restarting them)"
    )


def _stopped_reason(what: str, budget: Budget) -> str:
    if what == "time":
        return f"it exceeded its cost budget of {budget.time_ms} ms and was stopped"
    mib = budget.memory_bytes // (1024 * 1024)
    return f"it exceeded its memory budget of {mib} MiB and was stopped"


def _outcome(source: str, verdict: str, payload: Any, budget: Budget) -> Any:
    if verdict == "ok":
        return payload
    if verdict == "too_big":
        raise BudgetExceeded(
            source,
            f"its result is {payload} bytes, larger than the result size budget of "
            f"{budget.result_bytes} bytes",
        )
    raise EvaluationError(source, str(payload))


POOL = WorkerPool()
