"""A worker process that evaluates expressions for its parent, one request at a time.

Run as a script (`python _worker.py MEMORY_BYTES`), importing nothing but the evaluator and
orjson so it starts in tens of milliseconds. It caps its own address space (so a runaway
allocation aborts this process, not the parent), writes one READY byte, then answers
length-prefixed pickled requests (source, result byte limit, "json" or "pickle", activation,
documents) on stdin with (verdict, payload) on stdout: ("ok", result), ("error", reason),
("too_big", size) or ("missing", key). It exits at end of input, i.e. when its parent closes
the pipe or dies. Only the parent's pickles are read.

Documents are JSON objects sent as bytes (`_document.Document`): each is (variable, key, bytes
or None, trie). The worker parses the bytes once and keeps the last few by key, so the parent
sends None for a key it has sent this worker before; "missing" asks it to send them again.

`reason` and `prune` are shared with the parent, so both word an error and cut an activation
the same way.
"""

from __future__ import annotations

import pickle
import resource
import sys
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, BinaryIO

import cel
import orjson

HEADER_BYTES = 8
READY = b"R"
MAX_PROGRAMS = 1000  # a worker is long-lived; keep its cache bounded
MAX_DOCUMENTS = 4  # parsed documents kept: the events of the admissions in progress

# A trie of field names; None marks "keep the whole value from here" (see _prune).
Trie = dict[str, "Trie | None"]
Documents = tuple[tuple[str, str, bytes | None, "Trie | None"], ...]


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


def prune(activation: Mapping[str, Any], trie: Trie) -> dict[str, Any]:
    """A copy of `activation` holding only what `trie` selects; the values are not copied."""
    pruned: dict[str, Any] = {}
    stack: list[tuple[Mapping[str, Any], Trie, dict[str, Any]]] = [(activation, trie, pruned)]
    while stack:  # explicit stack: a 4 KB member chain is ~2000 fields deep
        source, node, target = stack.pop()
        for name, child in node.items():
            if name not in source:
                continue
            value = source[name]
            if child is None or not isinstance(value, dict):
                target[name] = value
            else:
                copy: dict[str, Any] = {}
                target[name] = copy
                stack.append((value, child, copy))
    return pruned


class _Missing(Exception):
    """A document the parent believed this worker had (it forgot or never got it)."""


def _add_documents(
    activation: dict[str, Any], documents: Documents, parsed: OrderedDict[str, Any]
) -> None:
    for variable, key, raw, trie in documents:
        if key in parsed:
            parsed.move_to_end(key)
        elif raw is None:
            raise _Missing(key)
        else:
            parsed[key] = orjson.loads(raw)
            while len(parsed) > MAX_DOCUMENTS:
                parsed.popitem(last=False)
        value = parsed[key]
        activation[variable] = (
            value if trie is None else prune({variable: value}, {variable: trie})[variable]
        )


def _answer(
    programs: dict[str, Any], parsed: OrderedDict[str, Any], request: tuple[Any, ...]
) -> bytes:
    source, result_limit, encoding, encoded, documents = request
    activation = orjson.loads(encoded) if encoding == "json" else pickle.loads(encoded)
    try:
        _add_documents(activation, documents, parsed)
    except _Missing as missing:
        return frame(("missing", missing.args[0]))
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
    parsed: OrderedDict[str, Any] = OrderedDict()
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    stdout.write(READY)
    stdout.flush()
    while (request := _read_message(stdin)) is not None:
        if len(programs) >= MAX_PROGRAMS:
            programs.clear()
        stdout.write(_answer(programs, parsed, request))
        stdout.flush()


if __name__ == "__main__":
    main()
