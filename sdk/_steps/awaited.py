"""Catching a step call that was never awaited.

`ctx.step.run(...)` without `await` builds a coroutine that never runs: the step would be
skipped silently and the run would go on as though it had returned. So each call is tracked
until it is awaited, and the request fails instead, naming the step.
"""

from __future__ import annotations

from collections.abc import Coroutine, Generator
from typing import Any, TypeVar

from weir.sdk._errors import CodedError

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)  # a StepCall[str] is a StepCall[object], as coroutines are


class NotAwaited(BaseException):
    """A step call left without `await` (a BaseException so `except Exception` cannot hide it)."""

    def __init__(self, step_id: str) -> None:
        super().__init__(step_id)
        self.step_id = step_id

    def error(self) -> CodedError:
        message = (
            f'step "{self.step_id}" was never awaited, so it never ran: '
            "write `await ctx.step.run(...)` (and likewise for every ctx.step method)"
        )
        return CodedError("step_not_awaited", "StepNotAwaitedError", message)


class StepCall(Coroutine[Any, Any, T_co]):
    """What an async step method returns: its coroutine, which knows when it is awaited.

    A Coroutine itself, so asyncio.create_task and gather take it as they took the plain one.
    """

    def __init__(self, coro: Coroutine[Any, Any, T_co], calls: Calls, step_id: object) -> None:
        self._coro = coro
        self._calls = calls
        self.step_id = str(step_id)

    def __await__(self) -> Generator[Any, None, T_co]:
        self._calls.awaited(self)
        return (yield from self._coro.__await__())

    def send(self, value: Any) -> Any:
        self._calls.awaited(self)  # a Task drives the coroutine by send(), never by await
        return self._coro.send(value)

    def throw(self, *args: Any) -> Any:
        return self._coro.throw(*args)

    def close(self) -> None:
        self._coro.close()  # no "coroutine was never awaited" warning on top of our error


class Calls:
    """The step calls of one request that have not been awaited yet, in call order."""

    def __init__(self) -> None:
        self._pending: list[StepCall[Any]] = []

    def track(self, step_id: object, coro: Coroutine[Any, Any, T]) -> StepCall[T]:
        call = StepCall(coro, self, step_id)
        self._pending.append(call)
        return call

    def awaited(self, call: StepCall[Any]) -> None:
        if call not in self._pending:
            return  # awaited twice: the coroutine itself says so
        index = self._pending.index(call)
        if index > 0:  # an earlier call was passed over: it will never run
            raise NotAwaited(self._pending[0].step_id)
        del self._pending[index]

    def check(self) -> None:
        """Raise for a call still not awaited when the handler has finished."""
        if self._pending:
            raise NotAwaited(self._pending[0].step_id)

    def close(self) -> None:
        for call in self._pending:
            call.close()
        self._pending.clear()
