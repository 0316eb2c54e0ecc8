"""What weir.sdk logs in the app's terminal, and the replay-aware `ctx.logger`.

A step that raises is logged with its traceback where it ran, in the app: that is where the
developer is looking. The rule for where the SDK's lines go (docs/sdk.md#ctxlogger):
- once the app has configured logging (a handler on the root logger or on a `weir.sdk`
  logger: `logging.basicConfig`, Django's LOGGING, uvicorn's `--log-config`...), the app's
  handlers and levels decide, as for any library;
- until then (a plain `uvicorn app:app` configures only uvicorn's own loggers), the SDK
  writes its lines to stderr itself, INFO and above (or from the level set on a `weir.sdk`
  logger): Python's last resort would print only warnings, and `ctx.logger.info` nothing.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Mapping
from typing import Any

from weir.sdk._errors import CodedError

log = logging.getLogger("weir.sdk")
FUNCTION_LOG = logging.getLogger("weir.sdk.function")
UNCONFIGURED_LEVEL = logging.INFO  # the SDK's lines shown while the app configured no logging


class _Stderr(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever `sys.stderr` is at the time, as logging's last resort does."""

    def emit(self, record: logging.LogRecord) -> None:
        self.stream = sys.stderr
        super().emit(record)


class _TerminalFormat(logging.Formatter):
    """`INFO weir.sdk.function: loaded order 42 (function shop-process-order, run 01J...)`."""

    def format(self, record: logging.LogRecord) -> str:
        text = f"{record.levelname} {record.name}: {super().format(record)}"
        function, run_id = getattr(record, "function", None), getattr(record, "run_id", None)
        if function or run_id:
            first, newline, rest = text.partition("\n")
            text = f"{first} (function {function}, run {run_id}){newline}{rest}"
        return text


_TERMINAL = _Stderr()
_TERMINAL.setFormatter(_TerminalFormat())
_STANDALONE: dict[str, logging.Logger] = {}


def emit(logger: logging.Logger, level: int, msg: object, *args: object, **kwargs: Any) -> None:
    """`logger.log(level, msg, *args, **kwargs)` by the rule of this module's docstring."""
    if logger.hasHandlers():
        logger.log(level, msg, *args, **kwargs)
        return
    if level < _unconfigured_level(logger) or logging.root.manager.disable >= level:
        return
    standalone = _STANDALONE.get(logger.name)
    if standalone is None:  # outside the hierarchy: it reaches our handler alone
        standalone = logging.Logger(logger.name, logging.DEBUG)
        standalone.addHandler(_TERMINAL)
        _STANDALONE[logger.name] = standalone
    standalone.log(level, msg, *args, **kwargs)


def _unconfigured_level(logger: logging.Logger) -> int:
    """The level set on `logger` or a parent below the root, else UNCONFIGURED_LEVEL."""
    current: logging.Logger | None = logger
    while current is not None and current is not logging.root:
        if current.level != logging.NOTSET:
            return current.level
        current = current.parent
    return UNCONFIGURED_LEVEL


def step_failed(step_id: str, err: BaseException, *, attempt: int, last: bool) -> None:
    outcome = "failed for good" if last else "failed; Weir will retry it"
    emit(
        log,
        logging.ERROR,
        'step "%s" raised %s (attempt %d): %s',
        step_id,
        type(err).__name__,
        attempt + 1,
        outcome,
        exc_info=err,
    )


def function_failed(slug: str, err: BaseException) -> None:
    if isinstance(err, CodedError):  # the SDK's own finding: its traceback is not the user's
        emit(log, logging.ERROR, "function %s: %s", slug, err.message)
        return
    emit(log, logging.ERROR, "function %s raised %s", slug, type(err).__name__, exc_info=err)


class ReplayLogger:
    """`ctx.logger`: a logger that stays silent while the handler replays memoized steps.

    The handler runs from the top on every call, so a plain log line between steps would be
    printed once per step; this one is printed only when the code runs for the first time.
    """

    def __init__(
        self,
        replaying: Callable[[], bool],
        extra: Mapping[str, str],
        logger: logging.Logger = FUNCTION_LOG,
    ) -> None:
        self._replaying = replaying
        self._extra = dict(extra)
        self.logger = logger

    def debug(self, msg: object, *args: object, **kwargs: Any) -> None:
        self._log(logging.DEBUG, msg, args, kwargs)

    def info(self, msg: object, *args: object, **kwargs: Any) -> None:
        self._log(logging.INFO, msg, args, kwargs)

    def warning(self, msg: object, *args: object, **kwargs: Any) -> None:
        self._log(logging.WARNING, msg, args, kwargs)

    def error(self, msg: object, *args: object, **kwargs: Any) -> None:
        self._log(logging.ERROR, msg, args, kwargs)

    def exception(self, msg: object, *args: object, **kwargs: Any) -> None:
        kwargs.setdefault("exc_info", True)
        self._log(logging.ERROR, msg, args, kwargs)

    def critical(self, msg: object, *args: object, **kwargs: Any) -> None:
        self._log(logging.CRITICAL, msg, args, kwargs)

    def log(self, level: int, msg: object, *args: object, **kwargs: Any) -> None:
        self._log(level, msg, args, kwargs)

    def _log(self, level: int, msg: object, args: tuple[object, ...], kwargs: Any) -> None:
        if self._replaying():
            return
        kwargs["extra"] = {**self._extra, **(kwargs.get("extra") or {})}
        kwargs.setdefault("stacklevel", 4)  # the record points at the handler, not at us
        emit(self.logger, level, msg, *args, **kwargs)
