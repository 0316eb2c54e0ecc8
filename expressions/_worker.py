"""A worker process that evaluates expressions for its parent, one request at a time.

Run as a script (`python _worker.py MEMORY_BYTES`), importing nothing but the evaluator and
orjson so it starts in tens of milliseconds. It caps its own address space (so a runaway
allocation aborts this process, not the parent), writes one READY byte, then answers
length-prefixed pickled requests (source, result byte limit, "json" or "pickle", activation)
on stdin with (verdict, payload) on stdout: ("ok", result), ("error", reason) or
("too_big", size). It exits at end of input, i.e. when its parent closes the pipe or dies.
Only the parent's pickles are read.

`reason` is shared with the in-process evaluator, so both word an error the same way.
"""

from __future__ import annotations

import pickle
import resource
import sys
from typing import Any, BinaryIO

import cel
import orjson

HEADER_BYTES = 8
READY = b"R"
MAX_PROGRAMS = 1000  # a worker is long-lived; keep its cache bounded


def reason(error: BaseException) -> str:
    """An evaluation error in words; panics derive from BaseException only."""
    if isinstance(error, KeyError):
        return f"no such field or key: {error.args[0]!r}" if error.args else "no such key"
    if isinstance(error, Exception):
        return f"{type(error).__name__}: {shorten(str(error))}"
    return f"the evaluator panicked: {shorten(str(error))}"


def shorten(text: str, limit: int = 300) -> str:
    # The evaluator's messages may quote the whole (up to 4 KB) expression.
    return text if len(text) <= limit else text[: limit - 1] + "…"


def frame(message: Any) -> bytes:
    body = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return len(body).to_bytes(HEADER_BYTES, "big") + body


def _read_message(stream: BinaryIO) -> Any | None:
    header = stream.read(HEADER_BYTES)
    if len(header) < HEADER_BYTES:
        return None
    return pickle.loads(stream.read(int.from_bytes(header, "big")))


def _answer(programs: dict[str, Any], request: tuple[str, int, str, Any]) -> bytes:
    source, result_limit, encoding, encoded = request
    activation = orjson.loads(encoded) if encoding == "json" else encoded
    try:
        if source not in programs:
            programs[source] = cel.compile(source)
        result = programs[source].execute(activation)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as error:
        return frame(("error", reason(error)))
    framed = frame(("ok", result))
    if len(framed) > result_limit + HEADER_BYTES:
        return frame(("too_big", len(framed) - HEADER_BYTES))
    return framed


def main() -> None:
    memory = int(sys.argv[1])
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    programs: dict[str, Any] = {}
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    stdout.write(READY)
    stdout.flush()
    while (request := _read_message(stdin)) is not None:
        if len(programs) >= MAX_PROGRAMS:
            programs.clear()
        stdout.write(_answer(programs, request))
        stdout.flush()


if __name__ == "__main__":
    main()
