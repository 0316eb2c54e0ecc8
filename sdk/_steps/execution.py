"""The replay engine of one request: memo lookups, step planning and interrupts (§9).

User code runs from the top on every request. Each step either finds its memo and returns
it, or stops the code with an Interrupt carrying the op(s) for the server. The decision
logic lives here, once, for both the async and the sync step API.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any, NoReturn

from weir.sdk._declaring import jsoncheck as _jsoncheck
from weir.sdk._declaring.options import Checkpoint
from weir.sdk._errors import CodedError
from weir.sdk._steps.awaited import Calls
from weir.sdk._steps.memo import unwrap
from weir.sdk._steps.ops import (
    STEP_ERROR,
    STEP_FAILED,
    STEP_PLANNED,
    STEP_RUN,
    Op,
    StepSlot,
    error_object,
)


class Interrupt(BaseException):
    """Stops user code: `ops` answer this request (a BaseException so `except Exception`
    in user code cannot swallow it)."""

    def __init__(self, ops: list[Op], *, no_retry: bool = False) -> None:
        super().__init__(f"{len(ops)} step op(s)")
        self.ops = ops
        self.no_retry = no_retry


class Skip(BaseException):
    """A targeted request met a step other than its target."""

    def __init__(self, display_name: str) -> None:
        super().__init__(display_name)
        self.display_name = display_name


class NestedStep(BaseException):
    """A step was called from inside a running step.run."""


def unexpected(display_name: str) -> CodedError:
    message = f'found step "{display_name}" when targeting a different step'
    return CodedError("step_unexpected", "StepUnexpectedError", message)


class Budget:
    """How far one request may run on past its steps (the function's Checkpoint)."""

    def __init__(self, checkpoint: Checkpoint) -> None:
        self.max_steps = checkpoint.max_steps
        self.deadline = time.monotonic() + checkpoint.max_ms / 1000

    def spent(self, steps: int) -> bool:
        return steps >= self.max_steps or time.monotonic() >= self.deadline


def _is_input(memo: Any) -> bool:
    return isinstance(memo, dict) and set(memo) == {"input"} and isinstance(memo["input"], list)


def _input_opts(args: tuple[Any, ...]) -> dict[str, Any] | None:
    """`{"input": [...args]}`, or None for no arguments or ones JSON cannot carry (an Event
    object, a function): nothing to show or replace then."""
    if not args:
        return None
    try:
        return {"input": json.loads(json.dumps(list(args)))}
    except (TypeError, ValueError):
        return None


class RunState:
    """Per-request state: memos, repeat counters, the targeted step, the parallel depth,
    and the steps a checkpointed request has run so far (`saved`, reported with its end)."""

    def __init__(
        self,
        memos: dict[str, Any],
        *,
        target: str | None = None,
        disable_immediate: bool = False,
        attempt: int = 0,
        max_attempts: int | None = None,
        checkpoint: Checkpoint | None = None,
    ) -> None:
        # A rerun from a step may give that step new arguments: `{"input": [...]}` in place of
        # a memo, as Inngest sends it. Not a result: the step runs, with these arguments.
        self.inputs = {k: v["input"] for k, v in memos.items() if _is_input(v)}
        self.memos = {k: v for k, v in memos.items() if k not in self.inputs}
        self.target = target
        self.disable_immediate = disable_immediate
        self.attempt = attempt
        self.max_attempts = max_attempts
        self.group_depth = 0
        self.executing = False
        self.calls = Calls()
        self.saved: list[Op] = []
        self.trace: Any = None  # where step spans start (_tracing.request_context)
        # A targeted or planning request runs one step or none: never checkpointed.
        eager = checkpoint is not None and target is None and not disable_immediate
        self.budget = Budget(checkpoint) if checkpoint is not None and eager else None
        self._counts: dict[str, int] = {}
        self._replayed: set[str] = set()

    @property
    def replaying(self) -> bool:
        """True while the code has memoized steps ahead of it (and is not inside a step)."""
        return not self.executing and len(self._replayed) < len(self.memos)

    def slot(self, user_id: str) -> StepSlot:
        if self.executing:
            raise NestedStep(user_id)
        if not isinstance(user_id, str) or not user_id:
            raise ValueError(f"a step id must be a non-empty string, got {user_id!r}")
        seen = self._counts.get(user_id, 0)
        self._counts[user_id] = seen + 1
        return StepSlot(user_id, seen or None)

    def lookup(self, slot: StepSlot) -> tuple[bool, Any]:
        if slot.hashed not in self.memos:
            return False, None
        self._replayed.add(slot.hashed)
        return True, unwrap(self.memos[slot.hashed])

    def report(self, user_id: str, build: Callable[[StepSlot], Op]) -> Any:
        """A step the server performs (sleep, wait, invoke): its memo, or stop with its op."""
        slot = self.slot(user_id)
        found, value = self.lookup(slot)
        if found:
            return value
        self.gate(build(slot))
        raise AssertionError("gate() always raises for ops the server performs")

    def begin_run(self, user_id: str, args: tuple[Any, ...] = ()) -> tuple[Op | None, Any]:
        """A step.run: `(None, memo)` when done before, `(op, arguments)` when it runs now:
        `args`, or those a rerun from this step gave it. The op reports the arguments it was
        given (`opts.input`, as Inngest's TypeScript SDK does) when they are JSON."""
        slot = self.slot(user_id)
        found, value = self.lookup(slot)
        if found:
            return None, value
        given = self.inputs.get(slot.hashed)
        if given is not None:
            args = tuple(given)
        op = Op(STEP_RUN, slot, name=user_id, opts=_input_opts(args))
        self.gate(op)
        return op, args

    def gate(self, op: Op) -> None:
        """Return only when a step.run should execute in this request; otherwise raise."""
        if self.target is not None:
            if op.slot.hashed != self.target:
                raise Skip(op.slot.user_id)
            if op.op == STEP_RUN:
                return
            raise Interrupt([op])
        if op.op == STEP_RUN and not (self.group_depth or self.disable_immediate):
            if self.saved and self._stop_before_next():
                raise Interrupt([])  # this step runs in the next request
            return
        raise Interrupt([op.with_op(STEP_PLANNED) if op.op == STEP_RUN else op])

    def _stop_before_next(self) -> bool:
        """Whether a request that has run a step stops before the next: unless checkpointed,
        at its budget, and in a retry, whose attempt number is the failed step's (a step run
        after it would inherit it; the next request, a new call, starts at attempt 0)."""
        return self.budget is None or self.attempt > 0 or self.budget.spent(len(self.saved))

    def ran(self, op: Op, result: Any) -> Any:
        """Report a step's result: stop here, or (checkpointed) keep it and go on with the
        value a replay would give, the result as JSON read back."""
        problem = _jsoncheck.problem(result)
        if problem is not None:
            message = f'"{op.slot.user_id}" returned unserializable data: {problem}'
            raise CodedError("output_unserializable", "OutputUnserializableError", message)
        if self.budget is None:
            raise Interrupt([replace(op, data=result)])
        # Encoded now: a later step changing the object it returned changes neither the
        # result reported nor the value code after this step was given (a copy of its own).
        text = json.dumps(result)
        self.saved.append(replace(op, data=json.loads(text)))
        self.memos[op.slot.hashed] = {"data": json.loads(text)}
        self._replayed.add(op.slot.hashed)
        return json.loads(text)

    @property
    def last_attempt(self) -> bool:
        # Only with max_attempts can the SDK know this attempt was the last (§8.1).
        return self.max_attempts is not None and self.attempt + 1 >= self.max_attempts

    def failed(self, op: Op, err: Exception) -> NoReturn:
        kind = STEP_FAILED if self.last_attempt else STEP_ERROR
        raise Interrupt([replace(op, op=kind, error=error_object(err))])

    def nested(self, op: Op) -> NoReturn:
        error = {
            "code": "step_nested",
            "message": "Nested steps are not supported.",
            "name": "StepNestedError",
            "stack": None,
        }
        raise Interrupt([replace(op, op=STEP_ERROR, error=error)], no_retry=True)
