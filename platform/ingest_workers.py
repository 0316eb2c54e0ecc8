"""Worker processes for the JSON work on large events, so the serving process never holds the
GIL for it: parsing and checking a large request body (`parse`), and turning a stored large
event into canonical JSON for a request to an app (`canonical`).

Parsing 3 MiB into Python objects, checking every value and serializing it again takes
50-200 ms of GIL in one piece, during which no other request of the process is answered. A
worker does the same work with the same code (`ingest.parse_large_body`) and sends back bytes
and a few small fields, which cost the serving process a copy.

The pool is a few child processes (`python -m weir.platform.ingest_workers`), each answering
length-prefixed pickled requests on stdin, one at a time. Callers block on a pipe without the
GIL (`run`, from a thread). A worker that dies (a body that exhausted its memory) fails only
that request, and is replaced. Only the parent's pickles are read, and only the children's.
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import pickle
import subprocess
import sys
import threading
from typing import IO, Any

import rfc8785
from weir.platform import jsonvalues
from weir.platform.ingest import EventError, IncomingEvent, parse_large_body

log = logging.getLogger("weir.ingest")
HEADER_BYTES = 8
WORKERS = 2


class WorkerDied(RuntimeError):
    """The worker ended while it had the request (out of memory, killed)."""


class Unsendable(ValueError):
    """A stored event that canonical JSON (RFC 8785) cannot carry."""


async def parse(body: bytes, now_ms: int) -> list[IncomingEvent]:
    """`ingest.parse_large_body` in a worker; raises EventError as it would."""
    result: list[IncomingEvent] = await asyncio.to_thread(POOL.run, "parse", body, now_ms)
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
        _stop(worker)
        with self._lock:
            self._count -= 1
            self._lock.notify()

    def _add(self) -> None:
        try:
            worker = subprocess.Popen(
                # -I: no current directory or PYTHON* variables; weir comes from the venv
                [sys.executable, "-I", "-m", __name__],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                close_fds=True,
            )
        except OSError:
            log.exception("could not start an ingest worker")
            with self._lock:
                self._count -= 1
                self._lock.notify_all()
            return
        self._release(worker)


def _stop(worker: subprocess.Popen[bytes]) -> None:
    if worker.poll() is None:
        worker.kill()
    for stream in (worker.stdin, worker.stdout):
        if stream is not None:
            stream.close()
    worker.wait()


def _write(stream: IO[bytes], message: Any) -> None:
    body = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(len(body).to_bytes(HEADER_BYTES, "big") + body)
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
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while True:
        try:
            request = _read(stdin)
        except EOFError:
            return  # the parent closed the pipe or died
        _write(stdout, _answer(request))


POOL = Pool()

if __name__ == "__main__":
    main()
