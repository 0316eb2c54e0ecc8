"""Structured logs: JSON lines in `weir start`, plain text in `weir dev`.

The ids a line is about (run, function, event, step) live in a context variable: `bind` sets
them for a block (and every task it starts), and `IdsFilter` copies them onto each record, so
any log call inside a call's handling carries them without passing them around.
"""

import functools
import json
import logging
import re
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any

_ids: ContextVar[Mapping[str, str] | None] = ContextVar("weir_log_ids", default=None)


def current_ids() -> Mapping[str, str]:
    return _ids.get() or {}


@contextmanager
def bind(**ids: str | None) -> Iterator[None]:
    """Attach ids to every line logged inside the block; None leaves an id out."""
    token = _ids.set({**current_ids(), **{k: v for k, v in ids.items() if v}})
    try:
        yield
    finally:
        _ids.reset(token)


class IdsFilter(logging.Filter):
    """Copies the bound ids (and `extra={"fields": {...}}`) onto the record."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.weir_ids = {**current_ids(), **getattr(record, "ids", {})}
        record.weir_fields = dict(getattr(record, "fields", {}))
        return True


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
            **getattr(record, "weir_ids", {}),
            **getattr(record, "weir_fields", {}),
        }
        if record.exc_info:
            line["exc"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str, separators=(",", ":"))


class TextFormatter(logging.Formatter):
    """`12:00:01 INFO weir.run run finished run_id=... status=COMPLETED`: for a terminal.

    Control characters are escaped everywhere, a field's value is quoted unless it is one
    word, and each line of a traceback is indented: whatever an event, a step or an app
    said, it cannot start a line of its own or pass for another field."""

    def __init__(self) -> None:
        super().__init__(datefmt="%H:%M:%S")
        self._second, self._clock = -1, ""

    def format(self, record: logging.LogRecord) -> str:
        # Written out rather than through a copy of the record and a format string: a line
        # is logged for every run that starts and ends, on the event loop.
        pairs = {**getattr(record, "weir_ids", {}), **getattr(record, "weir_fields", {})}
        stack = pairs.pop("stack", None)  # a traceback reads best as the lines it is
        tail = "".join([f" {_key_text(key)}={field_text(value)}" for key, value in pairs.items()])
        head = f"{self._time(record)} {record.levelname} {record.name}"
        line = f"{head} {escape(record.getMessage())}{tail}"
        if stack is None and not record.exc_info and not record.stack_info:
            return line
        return line + _indented(str(stack or "")) + self._traceback(record)

    def _time(self, record: logging.LogRecord) -> str:
        """The record's time of day, as `formatTime` writes it (made once per second)."""
        second = int(record.created)
        if second != self._second:
            self._second, self._clock = second, self.formatTime(record, self.datefmt)
        return self._clock

    def _traceback(self, record: logging.LogRecord) -> str:
        text = self.formatException(record.exc_info) if record.exc_info else ""
        text += f"\n{self.formatStack(record.stack_info)}" if record.stack_info else ""
        return _indented(text)


def _indented(text: str) -> str:
    """`text` as escaped lines under the record, each indented by four spaces."""
    return "".join(f"\n    {escape(line)}" for line in text.splitlines())


# Controls and line separators: what could end a line, or hide part of it on a terminal.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
# a value written bare: no whitespace, quote, equals sign, backslash or control character
_ONE_WORD = re.compile(r'[^\s="\\\x00-\x1f\x7f-\x9f\u2028\u2029]+')


def escape(text: str) -> str:
    """`text` on one line: every control character as \\n, \\r, \\t or \\uXXXX."""
    return _CONTROL.sub(lambda m: _SHORT.get(m.group(), f"\\u{ord(m.group()):04x}"), text)


def field_text(value: Any) -> str:
    """A field's value, quoted (its quotes and backslashes escaped) unless it is one word."""
    text = value if type(value) is str else str(value)
    if _ONE_WORD.fullmatch(text):  # most values (ids, names, numbers): one test
        return text
    return '"' + escape(text.replace("\\", "\\\\").replace('"', '\\"')) + '"'


@functools.lru_cache(maxsize=256)
def _key_text(key: Any) -> str:
    """A field's name as written: names come from code, a handful of them, so each is escaped
    once."""
    return escape(str(key))


def handler(json_lines: bool, stream: Any = None) -> logging.Handler:
    out = logging.StreamHandler(stream or sys.stderr)
    out.setFormatter(JsonFormatter() if json_lines else TextFormatter())
    out.addFilter(IdsFilter())
    return out


def configure(json_lines: bool, level: str = "info") -> None:
    """One handler on the root logger: Weir's loggers and uvicorn's all go through it."""
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler(json_lines))
    root.setLevel(level.upper())
    # Neither format writes a thread or process name: a record need not look them up (a line
    # is logged for every run that starts and ends).
    logging.logThreads = logging.logProcesses = logging.logMultiprocessing = False
