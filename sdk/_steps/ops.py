"""Opcodes the SDK answers with (§8.1), and the step-id hashing they carry."""

from __future__ import annotations

import hashlib
import traceback
from dataclasses import dataclass, replace
from typing import Any

STEP_RUN = "StepRun"
STEP_ERROR = "StepError"
STEP_FAILED = "StepFailed"
STEP_PLANNED = "StepPlanned"
SLEEP = "Sleep"
WAIT_FOR_EVENT = "WaitForEvent"
WAIT_FOR_SIGNAL = "WaitForSignal"
INVOKE = "InvokeFunction"
AI_GATEWAY = "AIGateway"
RUN_COMPLETE = "RunComplete"  # the run's return value, after steps run in the same request
RUN_ERROR = "RunError"  # the request's error, after steps run in the same request


def hash_step_id(user_id: str, index: int | None) -> str:
    """SHA-1 of the user id, or of `<id>:<n>` for its n-th repeat in one code path."""
    text = user_id if not index else f"{user_id}:{index}"
    return hashlib.sha1(text.encode()).hexdigest()


@dataclass(frozen=True)
class StepSlot:
    """Where a step sits in the code path: the user's id, its repeat index, its hash."""

    user_id: str
    index: int | None

    @property
    def hashed(self) -> str:
        return hash_step_id(self.user_id, self.index)


@dataclass(frozen=True)
class Op:
    """One step operation reported to the server."""

    op: str
    slot: StepSlot
    name: str
    opts: dict[str, Any] | None = None
    data: Any = None
    error: dict[str, Any] | None = None

    def with_op(self, op: str) -> Op:
        return replace(self, op=op)

    def with_opts(self, extra: dict[str, Any]) -> Op:
        return replace(self, opts={**(self.opts or {}), **extra})

    def to_wire(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "displayName": self.slot.user_id,
            "id": self.slot.hashed,
            "name": self.name,
            "op": self.op,
            "opts": self.opts,
            "userland": {"id": self.slot.user_id, "index": self.slot.index},
        }
        if self.error is not None:
            body["error"] = self.error
        body["data"] = self.data
        return body


def error_object(err: BaseException, code: str = "unknown") -> dict[str, Any]:
    """The `{code, message, name, stack}` error shape of §8.3."""
    stack = "".join(traceback.format_exception(err))
    return {"code": code, "message": str(err), "name": type(err).__name__, "stack": stack}
