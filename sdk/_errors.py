"""Errors a user raises or catches, and the SDK's own coded errors."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from weir.sdk._durations import now_utc


class NonRetriableError(Exception):
    """Raise to fail the run now: the response carries `x-inngest-no-retry: true`."""


class RetryAfterError(Exception):
    """Raise to retry no earlier than `retry_after` (a delay or an absolute time)."""

    def __init__(self, message: str, retry_after: timedelta | datetime) -> None:
        super().__init__(message)
        if not isinstance(retry_after, timedelta | datetime):
            # found here, in the user's code, not later as a crash of the SDK's answer
            got = type(retry_after).__name__  # type: ignore[unreachable]  # untyped callers
            raise TypeError(f"retry_after must be a timedelta or a datetime, got {got}")
        self.retry_after = retry_after

    def retry_at(self) -> datetime:
        if isinstance(self.retry_after, datetime):
            return self.retry_after
        return now_utc() + self.retry_after


class StepError(Exception):
    """A step that failed for good, re-raised in user code when its memo is replayed."""

    def __init__(self, message: str, name: str, stack: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.name = name
        self.stack = stack


class InvalidFunctionsError(ValueError):
    """Every configuration problem of every function, found when the app starts serving."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(f"{len(self.problems)} invalid function option(s):\n{lines}")


class SendEventsError(Exception):
    """The Event API refused the events; `ids` holds whatever it accepted."""

    def __init__(self, message: str, ids: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.ids = list(ids)


class CodedError(Exception):
    """An SDK failure with a protocol error code (§8.3) and an error class name."""

    def __init__(self, code: str, name: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.name = name
        self.message = message
