"""Worker processes for the JSON work on large events, so the serving process never holds the
GIL for it: parsing and checking a large request body (`parse`), and turning a stored large
event into canonical JSON for a request to an app (`canonical`).

With `foresee`, the worker that parsed a body keeps its large events parsed and evaluates on
them the expressions admission will need (`weir.expressions.held`), before the transaction:
the event is parsed once, and the writer takes the outcomes instead of evaluating. As in a CEL
worker, the parse counts toward the first evaluation's time budget. Each evaluation runs in a
child the worker forks (sharing the parsed event), killed past the time budget; the worker
itself lives on.

Parsing 3 MiB into Python objects, checking every value and serializing it again takes
50-200 ms of GIL in one piece, during which no other request of the process is answered. A
worker does the same work with the same code (`ingest.parse_large_body`) and sends back bytes
and a few small fields, which cost the serving process a copy.

The pool is a few child processes (`python -m weir.platform.ingest.workers`), each answering
length-prefixed pickled requests on stdin, one at a time. Callers block on a pipe without the
GIL (`run`, from a thread). A worker that dies (a body that exhausted its memory) fails only
that request, and is replaced. Only the parent's pickles are read, and only the children's.
"""

from __future__ import annotations

import asyncio
import atexit
import gc
import logging
import os
import pickle
import select
import subprocess
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import replace
from typing import IO, Any

import rfc8785
from weir.expressions import Expression, held
from weir.expressions.held import (
    HeldRequest,
    HolderStopped,
    NotHeld,
    answer_held_forked,
    evaluate_held,
    reads,
)
from weir.platform.foundation import jsonvalues
from weir.platform.ingest.validate import (
    EventError,
    IncomingEvent,
    parse_large_body,
    parse_large_body_held,
)

log = logging.getLogger("weir.ingest")
HEADER_BYTES = held.HEADER_BYTES  # the holder's answers are framed by expressions' code
WORKERS = 2


class WorkerDied(RuntimeError):
    """The worker ended while it had the request (out of memory, killed)."""


class Unsendable(ValueError):
    """A stored event that canonical JSON (RFC 8785) cannot carry."""


# Evaluates an expression over a large event where the worker holds it (raises NotHeld when
# it cannot: the caller then leaves that one to the usual way).
HeldEvaluate = Callable[[Expression], Any]
# Given a large event (as Weir will store it, with a placeholder id), a HeldEvaluate and the ms
# its body took to parse (which count toward the first costly evaluation, as in a CEL worker),
# the outcomes to keep with it (`IncomingEvent.evaluated`).
Foresee = Callable[[IncomingEvent, HeldEvaluate, float], dict[str, tuple[Any, float]]]


async def parse(body: bytes, now_ms: int, foresee: Foresee | None = None) -> list[IncomingEvent]:
    """`ingest.parse_large_body` in a worker; raises EventError as it would. With `foresee`,
    each large event comes back with the outcomes it gave (see the module's docstring)."""
    if foresee is None:
        result: list[IncomingEvent] = await asyncio.to_thread(POOL.run, "parse", body, now_ms)
    else:
        result = await asyncio.to_thread(POOL.parse_foreseeing, body, now_ms, foresee)
    return result


async def canonical(raw: bytes) -> bytes:
    """The event stored as `raw` in canonical JSON (RFC 8785), as a request to an app holds
    it; raises Unsendable when it cannot be."""
    result: bytes = await asyncio.to_thread(POOL.run, "canonical", raw)
    return result


class Pool:
    def __init__(self, size: int = WORKERS) -> None:
        self.size = size
        self._lock = threading.Condition()
        self._idle: list[subprocess.Popen[bytes]] = []
        self._count = 0
        atexit.register(self.close)

    def warm(self) -> None:
        """Start the workers in the background, so the first large body need not wait."""
        with self._lock:
            while self._count < self.size:
                self._count += 1
                threading.Thread(target=self._add, daemon=True).start()

    def run(self, op: str, *args: Any) -> Any:
        """The answer to (op, *args) from an idle worker; blocks until one is free."""
        worker = self._acquire()
        try:
            assert worker.stdin is not None and worker.stdout is not None
            _write(worker.stdin, (op, *args))
            verdict, payload = _read(worker.stdout)
        except (OSError, EOFError, pickle.UnpicklingError):
            self._lost(worker)
            raise WorkerDied(f"an ingest worker ended while it handled {op!r}") from None
        self._release(worker)
        if verdict == "ok":
            return payload
        if verdict == "event_error":
            raise EventError(payload)
        if verdict == "unsendable":
            raise Unsendable(payload)
        raise RuntimeError(f"an ingest worker failed on {op!r}: {payload}")

    def parse_foreseeing(self, body: bytes, now_ms: int, foresee: Foresee) -> list[IncomingEvent]:
        worker = self._acquire()
        session = _Session(self, worker)
        started = time.monotonic()
        events = session.parse(body, now_ms)
        parse_ms = (time.monotonic() - started) * 1000  # charged once: to the body's first event
        try:
            return [
                replace(
                    event,
                    evaluated=foresee(
                        event, session.evaluator(index, event), 0.0 if index else parse_ms
                    ),
                )
                if event.raw is not None
                else event
                for index, event in enumerate(events)
            ]
        finally:
            session.end()

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for worker in idle:
            _stop(worker)

    def _acquire(self) -> subprocess.Popen[bytes]:
        with self._lock:
            while not self._idle:
                if self._count < self.size:
                    self._count += 1
                    threading.Thread(target=self._add, daemon=True).start()
                self._lock.wait()
            return self._idle.pop()

    def _release(self, worker: subprocess.Popen[bytes]) -> None:
        with self._lock:
            self._idle.append(worker)
            self._lock.notify()

    def _lost(self, worker: subprocess.Popen[bytes]) -> None:
        # Killed at once; reaped in the background: a process with a large heap takes a while
        # to unmap it, and the caller is answering a request.
        if worker.poll() is None:
            worker.kill()
        threading.Thread(target=_stop, args=(worker,), daemon=True).start()
        with self._lock:
            self._count -= 1
            self._lock.notify()
        self.warm()  # a replacement starts now, so the next large body need not wait for it

    def _add(self) -> None:
        try:
            worker = subprocess.Popen(
                # -I: no current directory or PYTHON* variables; weir comes from the venv
                [sys.executable, "-I", "-m", __name__],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                close_fds=True,
                # its own process group: a Ctrl-C in the terminal signals Weir alone, which
                # stops its workers itself (a worker interrupted would print a traceback and
                # fail the large body it was parsing while Weir drains)
                process_group=0,
            )
        except OSError:
            log.exception("could not start an ingest worker")
            with self._lock:
                self._count -= 1
                self._lock.notify_all()
            return
        self._release(worker)


class _Session:
    """One worker, from parsing a body to the last evaluation over its large events."""

    def __init__(self, pool: Pool, worker: subprocess.Popen[bytes]) -> None:
        self.pool, self.worker, self.alive = pool, worker, True

    def parse(self, body: bytes, now_ms: int) -> list[IncomingEvent]:
        verdict, payload = self._ask(("parse_held", body, now_ms), None)
        if verdict == "ok":
            events: list[IncomingEvent] = payload
            return events
        self.alive = False  # the worker holds nothing after a refusal: it waits for a request
        self.pool._release(self.worker)
        if verdict == "event_error":
            raise EventError(payload)
        raise RuntimeError(f"an ingest worker failed on 'parse_held': {payload}")

    def evaluator(self, index: int, event: IncomingEvent) -> HeldEvaluate:
        def evaluate(expression: Expression) -> Any:
            if not self.alive:
                raise NotHeld("the worker that held the event was stopped")
            if not event.user_id and reads(expression, "event", "id"):
                raise NotHeld("the event's id is made when it is stored")
            return evaluate_held(expression, "event", str(index), self._exchange)

        return evaluate

    def end(self) -> None:
        if self.alive:
            self.alive = False
            try:
                _write(self.worker.stdin, ("done",))  # type: ignore[arg-type]
            except OSError:
                self.pool._lost(self.worker)
                return
            self.pool._release(self.worker)

    def _exchange(self, request: HeldRequest, deadline: float) -> tuple[str, Any]:
        try:
            answer: tuple[str, Any] = self._ask(("evaluate", request), deadline)
        except HolderStopped:
            self.alive = False
            self.pool._lost(self.worker)  # it did not answer past the budget: replaced
            raise
        return answer

    def _ask(self, message: Any, deadline: float | None) -> Any:
        stdin, stdout = self.worker.stdin, self.worker.stdout
        assert stdin is not None and stdout is not None
        try:
            _write(stdin, message)
            if deadline is None:
                return _read(stdout)
            header = _read_by(stdout, HEADER_BYTES, deadline)
            return pickle.loads(_read_by(stdout, int.from_bytes(header, "big"), deadline))
        except (OSError, EOFError, pickle.UnpicklingError):
            if deadline is not None:
                raise HolderStopped("died") from None
            self.alive = False
            self.pool._lost(self.worker)
            raise WorkerDied(f"an ingest worker ended while it handled {message[0]!r}") from None


def _read_by(stream: IO[bytes], size: int, deadline: float) -> bytes:
    """`size` bytes from the worker, or HolderStopped("time") at the deadline."""
    fd = stream.fileno()
    chunks: list[bytes] = []
    while size > 0:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            raise HolderStopped("time")
        chunk = os.read(fd, min(size, 1 << 20))
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def _stop(worker: subprocess.Popen[bytes]) -> None:
    if worker.poll() is None:
        worker.kill()
    for stream in (worker.stdin, worker.stdout):
        if stream is not None:
            stream.close()
    worker.wait()


def _write(stream: IO[bytes], message: Any) -> None:
    stream.write(_frame(message))
    stream.flush()


def _read(stream: IO[bytes]) -> Any:
    header = stream.read(HEADER_BYTES)
    if len(header) < HEADER_BYTES:
        raise EOFError
    size = int.from_bytes(header, "big")
    body = stream.read(size)
    if len(body) < size:
        raise EOFError
    return pickle.loads(body)


def _hold(stdin: IO[bytes], stdout: IO[bytes], body: bytes, now_ms: int) -> None:
    """Parse `body`, answer with its events, then evaluate over its large events (kept
    parsed, by index) until the parent says it is done. The time since the body came counts
    toward the first evaluation's budget (`held.answer_held_forked`)."""
    received = time.monotonic()
    try:
        events, held = parse_large_body_held(body, now_ms)
    except EventError as error:
        _write(stdout, ("event_error", str(error)))
        return
    except Exception as error:  # a bug, not bad input
        _write(stdout, ("failed", f"{type(error).__name__}: {error}"))
        return
    _write(stdout, ("ok", events))
    kept: OrderedDict[str, Any] = OrderedDict((str(i), event) for i, event in held.items())
    del events, held
    first = True
    while True:
        op, *args = _read(stdin)
        if op != "evaluate":
            return  # "done"
        spent_ms = (time.monotonic() - received) * 1000 if first else 0.0
        first = False
        try:
            answer = answer_held_forked(kept, args[0], spent_ms)
        except OSError:  # no fork now (a process limit): the parent evaluates it the usual way
            answer = _frame(("missing", ""))
        except Exception as error:  # e.g. MemoryError while framing a result: that one fails
            answer = _frame(("error", f"{type(error).__name__}: {error}"))
        stdout.write(answer)  # framed as _write frames (expressions' HEADER_BYTES is ours)
        stdout.flush()


def _frame(message: Any) -> bytes:
    body = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return len(body).to_bytes(HEADER_BYTES, "big") + body


def _answer(request: tuple[Any, ...]) -> tuple[str, Any]:
    op, *args = request
    try:
        if op == "parse":
            return ("ok", parse_large_body(*args))
        if op == "canonical":
            return ("ok", bytes(rfc8785.dumps(jsonvalues.loads(args[0]))))
    except EventError as error:
        return ("event_error", str(error))
    except rfc8785.CanonicalizationError as error:
        return ("unsendable", str(error))
    except Exception as error:  # a bug, not bad input: said, and the worker goes on
        return ("failed", f"{type(error).__name__}: {error}")
    return ("failed", f"unknown operation {op!r}")


def main() -> None:
    # Parsed JSON holds no reference cycles, yet building millions of containers sets off the
    # collector again and again (half the parse of 3 MiB of objects): collect between requests.
    gc.disable()
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while True:
        try:
            request = _read(stdin)
            if request[0] == "parse_held":
                _hold(stdin, stdout, *request[1:])
            else:
                _write(stdout, _answer(request))
        except EOFError:
            return  # the parent closed the pipe or died
        gc.collect()


POOL = Pool()

if __name__ == "__main__":
    main()
