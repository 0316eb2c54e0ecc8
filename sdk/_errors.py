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


class NoFencingToken(LookupError):
    """The call holds no fencing token of `scope`. A run holds a `lane` token only if its
    function has `lane=`, the same through its whole life. A concurrency token
    (`concurrency0`, `concurrency1`) is per call: Weir hands one to a call only if the call
    was claimed while that key's live capacity was 1, so one call of a run may hold it and
    the next not (an operator raised the capacity: calls then run side by side, and no token
    could order them)."""

    def __init__(self, scope: str, held: Sequence[str], lookup: str) -> None:
        self.scope = scope
        self.held = sorted(held)
        why = (
            "Weir hands one only to a call claimed while that concurrency key's live capacity "
            "is 1; under a larger capacity (raised by an operator, or declared) calls run side "
            "by side and no token orders them"
            if scope.startswith("concurrency")
            else "only a run of a function declared with a lane holds one"
        )
        super().__init__(
            f"this call holds no {scope!r} fencing token (it holds: "
            f"{', '.join(self.held) or 'none'}): {why}. Where a write may go without a "
            f"token, read {lookup} instead: None when there is none"
        )


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
