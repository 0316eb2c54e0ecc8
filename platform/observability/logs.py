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
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any

_ids: ContextVar[Mapping[str, str] | None] = ContextVar("weir_log_ids", default=None)
Fields = dict[str, Any]


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
        pairs = {**getattr(record, "weir_ids", {}), **getattr(record, "weir_fields", {})}
        if record.exc_info:
            pairs["exc"] = self.formatException(record.exc_info)
        return self.line(record.created, record.levelname, record.name, record.getMessage(), pairs)

    def line(self, created: float, level: str, name: str, message: str, pairs: Fields) -> str:
        """The line of a record with these parts (`pairs`: its ids, then its fields)."""
        line: dict[str, Any] = {
            "ts": datetime.fromtimestamp(created, UTC).isoformat(timespec="milliseconds"),
            "level": level.lower(),
            "logger": name,
            "msg": message,
            **pairs,
        }
        return json.dumps(line, default=str, separators=(",", ":"))


class TextFormatter(logging.Formatter):
    """`12:00:01 INFO weir.run run finished run_id=... status=COMPLETED`: for a terminal.

    A record's first line starts with its time; every further line of it is indented. What
    may span lines is told apart from what may not by who wrote it:
    - the message's own text (a `str` format string, written in code) keeps its line breaks:
      each further line is written indented (the banner, a list of problems);
    - a value put into it (`%s` arguments) and a field's value are untrusted: written on
      their line, every control character escaped, a field's value quoted unless it is one
      word, so it can neither start a line nor pass for another field;
    - a `Block` field (and `stack`), text meant to be read as the lines it is (a traceback,
      a CEL error with its caret), is written under the record, each line escaped and
      indented: whatever an event, a step or an app said, it cannot start a record's line."""

    def __init__(self) -> None:
        super().__init__(datefmt="%H:%M:%S")
        self._clock = (-1, "")  # one pair: threads format records, one may read as one writes

    def format(self, record: logging.LogRecord) -> str:
        pairs = {**getattr(record, "weir_ids", {}), **getattr(record, "weir_fields", {})}
        line = self.line(record.created, record.levelname, record.name, _message(record), pairs)
        if not record.exc_info and not record.stack_info:
            return line
        return line + self._traceback(record)

    def line(self, created: float, level: str, name: str, message: str, pairs: Fields) -> str:
        """The lines of a record with these parts: `message` is its own text (its line breaks
        kept, further lines indented), `pairs` its ids, then its fields; a `stack` field's
        and each `Block` field's lines under it."""
        # Written out rather than through a copy of the record and a format string: a line
        # is logged for every run that starts and ends, on the event loop.
        blocks = [(key, pairs.pop(key)) for key in _block_keys(pairs)]
        tail = "".join([f" {_key_text(key)}={field_text(value)}" for key, value in pairs.items()])
        first, *more = message.split("\n") if "\n" in message else (message,)
        line = f"{self._time(created)} {level} {name} {escape(first)}{tail}"
        if more:
            line += _indented("\n".join(more))
        for _, text in blocks:  # a traceback reads best as the lines it is
            line += _indented(str(text))
        return line

    def _time(self, created: float) -> str:
        """The time of day, as `formatTime` writes it (made once per second)."""
        second, text = self._clock
        if int(created) != second:
            text = time.strftime(self.datefmt or "", self.converter(created))
            self._clock = (int(created), text)
        return text

    def _traceback(self, record: logging.LogRecord) -> str:
        text = self.formatException(record.exc_info) if record.exc_info else ""
        text += f"\n{self.formatStack(record.stack_info)}" if record.stack_info else ""
        return _indented(text)


def _indented(text: str) -> str:
    """`text` as escaped lines under the record, each indented by four spaces."""
    return "".join(f"\n    {escape(line)}" for line in text.splitlines())


class Block(str):
    """A field's text to be read as the lines it is (a CEL error with its caret line): the
    text format writes it under the record, each line escaped and indented; JSON, as any
    string."""

    __slots__ = ()


def _block_keys(pairs: Fields) -> list[str]:
    """The fields written under the record: `stack`, and each `Block`."""
    if not pairs:
        return []
    return [key for key, value in pairs.items() if key == "stack" or type(value) is Block]


def _message(record: logging.LogRecord) -> str:
    """The record's message, each value put into it escaped onto its line (see TextFormatter):
    only a `str` format string's own line breaks stay."""
    if not isinstance(record.msg, str):
        return escape(str(record.msg))  # a value logged as the message: nothing of it is ours
    if not record.args:
        return record.msg
    args = record.args
    try:
        if isinstance(args, Mapping):
            return record.msg % {key: _Escaped.of(value) for key, value in args.items()}
        return record.msg % tuple(_Escaped.of(value) for value in args)
    except (TypeError, ValueError, KeyError):  # as logging would fail: its own message
        return escape(record.getMessage())


class _Escaped:
    """A value put into a message, as `%s` and `%r` write it, escaped onto one line."""

    __slots__ = ("value",)

    def __init__(self, value: object) -> None:
        self.value = value

    @staticmethod
    def of(value: object) -> object:
        # numbers keep `%d` and `%.1f` working; their text has no control character
        return value if isinstance(value, int | float) else _Escaped(value)

    def __str__(self) -> str:
        return escape(str(self.value))

    def __repr__(self) -> str:
        return escape(repr(self.value))


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


class LineHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Weir's handler: a stream of lines in one of Weir's formats, ids copied onto records."""

    def __init__(self, formatter: JsonFormatter | TextFormatter, stream: Any = None) -> None:
        super().__init__(stream or sys.stderr)
        self.setFormatter(formatter)
        self.addFilter(IdsFilter())

    def write(self, level: int, name: str, message: str, pairs: Fields) -> None:
        """One line written as `emit` would write the record with these parts (an error in
        formatting or writing is handled as `emit` handles it)."""
        self.write_many(name, [(level, message, pairs)])

    def write_many(self, name: str, entries: Sequence[tuple[int, str, Fields]]) -> None:
        """Lines of (level, message, pairs), written and flushed at once; a line that cannot
        be formatted is handled as `emit` handles it, and the others are written."""
        formatter = self.formatter
        created, texts = time.time(), []
        first = entries[0][1] if entries else ""
        for level, message, pairs in entries:
            try:
                if not isinstance(formatter, JsonFormatter | TextFormatter):
                    raise TypeError(f"{type(formatter).__name__} cannot format a line")
                line = formatter.line(created, logging.getLevelName(level), name, message, pairs)
                texts.append(line + self.terminator)
            except Exception:
                self.handleError(logging.makeLogRecord({"msg": message, "name": name}))
        if not texts:
            return
        with self.lock:  # type: ignore[union-attr]
            try:
                self.stream.write("".join(texts))
                self.flush()
            except Exception:
                self.handleError(logging.makeLogRecord({"msg": first, "name": name}))


def handler(json_lines: bool, stream: Any = None) -> LineHandler:
    return LineHandler(JsonFormatter() if json_lines else TextFormatter(), stream)


def line(logger: logging.Logger, level: int, message: str, ids: Fields, fields: Fields) -> None:
    """Log `message` with `ids` (over the bound ones) and `fields`, as `logger.log` would with
    `extra={"ids": ..., "fields": ...}`.

    A line for every run that starts and ends: when Weir's own handler is the only one it
    reaches (as `configure` sets up), the line is written straight through it, without a
    LogRecord and the logging machinery's filters, locks and lookups on the way, which cost
    as much as the rest of the line. Any other set-up (a handler added to a logger, a
    filter, a test capturing logs) gets a record as ever."""
    if not logger.isEnabledFor(level):
        return
    out = _sole_handler(logger, level)
    if out is not None:
        out.write(level, logger.name, message, {**current_ids(), **ids, **fields})
        return
    extra = {"ids": ids, "fields": fields}
    logger.handle(logger.makeRecord(logger.name, level, "", 0, message, (), None, extra=extra))


def lines(logger: logging.Logger, entries: Sequence[tuple[int, str, Fields, Fields]]) -> None:
    """`line` for each (level, message, ids, fields) in order; through Weir's own handler
    alone (as `line` writes), all of them in one write: a line per run that starts and ends,
    and a write of each its own cost more than formatting it."""
    wanted = [entry for entry in entries if logger.isEnabledFor(entry[0])]
    if not wanted:
        return
    out = _sole_handler(logger, min(entry[0] for entry in wanted))
    if out is None:
        for level, message, ids, fields in wanted:
            line(logger, level, message, ids, fields)
        return
    bound = current_ids()
    out.write_many(logger.name, [(lvl, msg, {**bound, **i, **f}) for lvl, msg, i, f in wanted])


def _sole_handler(logger: logging.Logger, level: int) -> LineHandler | None:
    """The LineHandler that alone receives `logger`'s records of `level`, if there is one."""
    if logger.filters:
        return None
    current: logging.Logger | None = logger
    while current is not None:
        if current.handlers:
            return _ours_alone(current, level)
        if not current.propagate:
            return None
        current = current.parent
    return None


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


def _ours_alone(holder: logging.Logger, level: int) -> LineHandler | None:
    """The root's handler if it is a LineHandler, alone, taking `level`, with no filter but
    the one that copies ids."""
    if holder.parent is not None or len(holder.handlers) != 1:
        return None
    ours = holder.handlers[0]
    if type(ours) is not LineHandler or level < ours.level:
        return None
    if [type(f) for f in ours.filters] != [IdsFilter]:
        return None
    if not isinstance(ours.formatter, JsonFormatter | TextFormatter):
        return None
    return ours
