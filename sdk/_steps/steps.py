"""The step API on `ctx.step`: `Step` for async handlers, `StepSync` for plain functions."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, NoReturn, TypeVar, overload

from weir.sdk import _logs
from weir.sdk._declaring.function import Function
from weir.sdk._durations import Duration
from weir.sdk._errors import NonRetriableError, RetryAfterError, StepError
from weir.sdk._event import Event
from weir.sdk._steps.ai import AI, AISync
from weir.sdk._steps.awaited import StepCall
from weir.sdk._steps.execution import Interrupt, NestedStep, RunState, Skip
from weir.sdk._steps.ops import Op
from weir.sdk._steps.parallel import Branch, finish_all, finish_race, interrupted
from weir.sdk._steps.signal import Signal, as_signal
from weir.sdk._steps.stepops import (
    as_event,
    event_list,
    invoke_op,
    signal_op,
    sleep_op,
    sleep_until_op,
    wait_op,
)
from weir.sdk._tracing import step_span

T = TypeVar("T")
AsyncSend = Callable[[list[Event]], Awaitable[list[str]]]
SyncSend = Callable[[list[Event]], list[str]]


def _step_failed(state: RunState, op: Op, err: BaseException) -> NoReturn:
    """Route an exception raised by a step body (the shared part of both APIs)."""
    if isinstance(err, NestedStep):
        state.nested(op)
    if isinstance(err, NonRetriableError | RetryAfterError) or not isinstance(err, Exception):
        raise err  # these fail the whole request (§8.2), never a StepError op
    _logs.step_failed(op.slot.user_id, err, attempt=state.attempt, last=state.last_attempt)
    state.failed(op, err)


def _caught(err: BaseException, race: bool) -> Branch:
    if isinstance(err, Interrupt):
        return interrupted(err, race)
    if isinstance(err, Skip):
        return Branch(skipped=err.display_name)
    if race and isinstance(err, StepError):
        return Branch(error=err)  # a memoized failure settles a race branch
    raise err


def reply_opts(to: Signal) -> dict[str, Any]:
    if not isinstance(to, Signal) or to.delivery_id is None:
        raise ValueError(f"reply needs the Signal wait_for_signal returned, got {to!r:.200}")
    return {"reply": to.delivery_id}


class Step:
    """Durable steps for async handlers. Each `step_id` names a step within the run."""

    def __init__(self, state: RunState, send: AsyncSend) -> None:
        self._state = state
        self._send = send
        self.ai = AI(state)  # ctx.step.ai.infer: a model call the server makes

    # Each method returns the awaitable of its step, tracked so that a call left without
    # `await` fails the request naming the step (see _awaited.py) instead of being skipped.
    @overload
    def run(self, step_id: str, fn: Callable[..., Awaitable[T]], *args: Any) -> StepCall[T]: ...
    @overload
    def run(self, step_id: str, fn: Callable[..., T], *args: Any) -> StepCall[T]: ...
    def run(self, step_id: str, fn: Callable[..., Any], *args: Any) -> StepCall[Any]:
        """Run `fn(*args)` once; later replays return its memoized (JSON) result."""
        return self._state.calls.track(step_id, self._run(step_id, fn, *args))

    async def _run(self, step_id: str, fn: Callable[..., Any], *args: Any) -> Any:
        op, found = self._state.begin_run(step_id, args)
        if op is None:
            return found
        args = found  # as given, or as a rerun from this step replaced them
        self._state.executing = True
        try:
            with step_span(self._state.trace, op.slot.user_id, self._state.attempt):
                result = fn(*args)
                if inspect.isawaitable(result):
                    result = await result
        except BaseException as err:
            _step_failed(self._state, op, err)
        finally:
            self._state.executing = False
        return self._state.ran(op, result)

    def sleep(self, step_id: str, duration: Duration) -> StepCall[None]:
        async def step() -> None:
            self._state.report(step_id, sleep_op(duration))

        return self._state.calls.track(step_id, step())

    def sleep_until(self, step_id: str, until: datetime) -> StepCall[None]:
        async def step() -> None:
            self._state.report(step_id, sleep_until_op(until))

        return self._state.calls.track(step_id, step())

    def wait_for_event(
        self,
        step_id: str,
        *,
        event: str,
        timeout: Duration,
        if_exp: str | None = None,
    ) -> StepCall[Event | None]:
        """Wait for `event` (with `async` in `if_exp` = the candidate); None on timeout."""

        async def step() -> Event | None:
            return as_event(self._state.report(step_id, wait_op(event, if_exp, timeout)))

        return self._state.calls.track(step_id, step())

    def wait_for_signal(
        self,
        step_id: str,
        *,
        signal: str,
        timeout: Duration,
        if_exp: str | None = None,
        on_conflict: str = "fail",
    ) -> StepCall[Signal | None]:
        """Wait for `signal` (POST /v1/signals); None on timeout. Weir delivers it only if
        `if_exp` holds (`async.data` = the signal's data). A name another run waits on
        fails this step with StepError SignalConflictError (`on_conflict="replace"` takes
        it over: that run resumes with None)."""
        build = signal_op(signal, timeout, if_exp, on_conflict)

        async def step() -> Signal | None:
            return as_signal(self._state.report(step_id, build))

        return self._state.calls.track(step_id, step())

    def reply(self, step_id: str, to: Signal, data: Any) -> StepCall[Any]:
        """Answer the sender of `to` with `data` (a step: recorded once, returns `data`)."""
        state = self._state
        opts = reply_opts(to)

        async def step() -> Any:
            op, found = state.begin_run(step_id)
            if op is None:
                return found
            return state.ran(op.with_opts(opts), data)

        return state.calls.track(step_id, step())

    def invoke(
        self,
        step_id: str,
        *,
        function: Function | str,
        data: Mapping[str, Any] | None = None,
        timeout: Duration | None = None,
    ) -> StepCall[Any]:
        """Run another function (a Function or its slug) and return its result."""

        async def step() -> Any:
            return self._state.report(step_id, invoke_op(function, data, timeout))

        return self._state.calls.track(step_id, step())

    def send_event(self, step_id: str, events: Event | Sequence[Event]) -> StepCall[list[str]]:
        return self.run(step_id, self._send, event_list(events))

    async def parallel(self, callables: Sequence[Callable[[], Awaitable[T]]]) -> tuple[T, ...]:
        """Run every callable's steps in parallel; returns all results in order."""
        return finish_all(await self._visit(callables, race=False))

    async def race(self, step_id: str, callables: Sequence[Callable[[], Awaitable[T]]]) -> T:
        """Run the callables' steps in parallel; returns the first result to settle."""
        result: T = finish_race(self._state, step_id, await self._visit(callables, race=True))
        return result

    async def _visit(
        self, callables: Sequence[Callable[[], Awaitable[T]]], race: bool
    ) -> list[Branch]:
        self._state.group_depth += 1
        try:
            return [await self._branch(cb, race) for cb in callables]
        finally:
            self._state.group_depth -= 1

    async def _branch(self, callable_: Callable[[], Awaitable[T]], race: bool) -> Branch:
        try:
            return Branch(value=await callable_())
        except BaseException as err:
            return _caught(err, race)


class StepSync:
    """Durable steps for plain (non-async) handlers; same semantics as `Step`."""

    def __init__(self, state: RunState, send: SyncSend) -> None:
        self._state = state
        self._send = send
        self.ai = AISync(state)

    def run(self, step_id: str, fn: Callable[..., T], *args: Any) -> T:
        op, found = self._state.begin_run(step_id, args)
        if op is None:
            return found  # type: ignore[no-any-return]
        args = found  # as given, or as a rerun from this step replaced them
        self._state.executing = True
        try:
            with step_span(self._state.trace, op.slot.user_id, self._state.attempt):
                result = fn(*args)
        except BaseException as err:
            _step_failed(self._state, op, err)
        finally:
            self._state.executing = False
        return self._state.ran(op, result)  # type: ignore[no-any-return]

    def sleep(self, step_id: str, duration: Duration) -> None:
        self._state.report(step_id, sleep_op(duration))

    def sleep_until(self, step_id: str, until: datetime) -> None:
        self._state.report(step_id, sleep_until_op(until))

    def wait_for_event(
        self, step_id: str, *, event: str, timeout: Duration, if_exp: str | None = None
    ) -> Event | None:
        return as_event(self._state.report(step_id, wait_op(event, if_exp, timeout)))

    def wait_for_signal(
        self,
        step_id: str,
        *,
        signal: str,
        timeout: Duration,
        if_exp: str | None = None,
        on_conflict: str = "fail",
    ) -> Signal | None:
        build = signal_op(signal, timeout, if_exp, on_conflict)
        return as_signal(self._state.report(step_id, build))

    def reply(self, step_id: str, to: Signal, data: Any) -> Any:
        opts = reply_opts(to)
        op, found = self._state.begin_run(step_id)
        if op is None:
            return found
        return self._state.ran(op.with_opts(opts), data)

    def invoke(
        self,
        step_id: str,
        *,
        function: Function | str,
        data: Mapping[str, Any] | None = None,
        timeout: Duration | None = None,
    ) -> Any:
        return self._state.report(step_id, invoke_op(function, data, timeout))

    def send_event(self, step_id: str, events: Event | Sequence[Event]) -> list[str]:
        return self.run(step_id, self._send, event_list(events))

    def parallel(self, callables: Sequence[Callable[[], T]]) -> tuple[T, ...]:
        return finish_all(self._visit(callables, race=False))

    def race(self, step_id: str, callables: Sequence[Callable[[], T]]) -> T:
        result: T = finish_race(self._state, step_id, self._visit(callables, race=True))
        return result

    def _visit(self, callables: Sequence[Callable[[], T]], race: bool) -> list[Branch]:
        self._state.group_depth += 1
        try:
            return [self._branch(cb, race) for cb in callables]
        finally:
            self._state.group_depth -= 1

    def _branch(self, callable_: Callable[[], T], race: bool) -> Branch:
        try:
            return Branch(value=callable_())
        except BaseException as err:
            return _caught(err, race)
