"""What weir.sdk logs in the app's terminal, and the replay-aware `ctx.logger`.

A step that raises is logged with its traceback where it ran, in the app: that is where the
developer is looking. Python's last-resort handler prints warnings and errors to stderr even
when the app configured no logging, so nothing needs setting up to see them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from weir.sdk._errors import CodedError

log = logging.getLogger("weir.sdk")
FUNCTION_LOG = logging.getLogger("weir.sdk.function")


def step_failed(step_id: str, err: BaseException, *, attempt: int, last: bool) -> None:
    outcome = "failed for good" if last else "failed; Weir will retry it"
    log.error(
        'step "%s" raised %s (attempt %d): %s',
        step_id,
        type(err).__name__,
        attempt + 1,
        outcome,
        exc_info=err,
    )


def function_failed(slug: str, err: BaseException) -> None:
    if isinstance(err, CodedError):  # the SDK's own finding: its traceback is not the user's
        log.error("function %s: %s", slug, err.message)
        return
    log.error("function %s raised %s", slug, type(err).__name__, exc_info=err)


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
        if self._replaying() or not self.logger.isEnabledFor(level):
            return
        kwargs["extra"] = {**self._extra, **(kwargs.get("extra") or {})}
        kwargs.setdefault("stacklevel", 3)  # the record points at the handler, not at us
        self.logger.log(level, msg, *args, **kwargs)
