"""Size limits on what an app answers (docs/protocol.md §8): a step's output at most 4 MiB, a
function's output too, and a run's stored state at most 32 MiB. A breach fails the attempt
without retrying — the same code would send the same data again — so only the offending run
fails, with the limit named in its error. (The 8 MiB response cap is enforced while reading,
in http.py; the 1,000-steps cap where ops are applied, in runtime/outcomes.py.)"""

import json
from typing import Any

from weir.platform.executor.response import (
    AttemptFailed,
    Checkpointed,
    Completed,
    Op,
    Ops,
    Outcome,
    failed,
)
from weir.platform.foundation.vocabulary import RAN_OPS

MAX_STEP_OUTPUT_BYTES = 4 * 1024 * 1024
MAX_RUN_STATE_BYTES = 32 * 1024 * 1024
MIB = 1024 * 1024


# A value read from an answer and written back compactly is at most this many times its
# bytes in the answer (a character escaped as \uXXXX, a short number spelled out as a float),
# plus its wrapping as a stored step.
GROWTH = 8
WRAPPING = 128


def enforce(outcome: Outcome, state_bytes: int, answer_bytes: int | None = None) -> Outcome:
    """`outcome`, or the failure naming the limit it breaks. `answer_bytes`: the size of the
    answer it was read from; an answer far within every limit is not measured op by op."""
    if answer_bytes is not None and _far_within(outcome, state_bytes, answer_bytes):
        return outcome
    if isinstance(outcome, Completed):
        return _output_problem(outcome.output) or outcome
    if isinstance(outcome, Ops):
        return _ops_problem(outcome.ops, state_bytes) or outcome
    if isinstance(outcome, Checkpointed):
        return _checkpoint_problem(outcome, state_bytes) or outcome
    return outcome


def _far_within(outcome: Outcome, state_bytes: int, answer_bytes: int) -> bool:
    ops = len(outcome.ops) if isinstance(outcome, Ops) else 1
    if isinstance(outcome, Checkpointed):
        ops = (
            len(outcome.steps) + 1 + (len(outcome.then.ops) if isinstance(outcome.then, Ops) else 0)
        )
    most = answer_bytes * GROWTH + ops * WRAPPING
    return most <= MAX_STEP_OUTPUT_BYTES and state_bytes + most <= MAX_RUN_STATE_BYTES


def _checkpoint_problem(outcome: Checkpointed, state_bytes: int) -> AttemptFailed | None:
    """Every step of the answer counts, and its return value if it ended the run."""
    then = outcome.then
    ops = [*outcome.steps, *(then.ops if isinstance(then, Ops) else ())]
    problem = _ops_problem(ops, state_bytes)
    if problem is None and isinstance(then, Completed):
        return _output_problem(then.output)
    return problem


def _output_problem(output: Any) -> AttemptFailed | None:
    size = _size(output)
    if size <= MAX_STEP_OUTPUT_BYTES:
        return None
    return failed(
        "OutputTooLarge",
        f"the function returned {size} bytes of output; at most {_mib(MAX_STEP_OUTPUT_BYTES)} "
        "are allowed — store large data elsewhere and return a reference",
        no_retry=True,
    )


def _ops_problem(ops: list[Op], state_bytes: int) -> AttemptFailed | None:
    total = state_bytes
    for op in ops:
        if op.op not in RAN_OPS:  # the ops whose data becomes run state
            continue
        size = _size({"data": op.data, "error": op.error})
        if size > MAX_STEP_OUTPUT_BYTES:
            return _too_large_step(op.display_name or op.id, size)
        total += size
    return state_problem(total)


def state_problem(total: int) -> AttemptFailed | None:
    """A run whose saved step results would reach `total` bytes: None while within the limit."""
    if total <= MAX_RUN_STATE_BYTES:
        return None
    return failed(
        "RunStateTooLarge",
        f"the run's saved step results would reach {total} bytes; a run's state may be at "
        f"most {_mib(MAX_RUN_STATE_BYTES)} — return less data from each step",
        no_retry=True,
    )


def saved_size(memo: Any) -> int:
    """A step result's size as the run state stores it."""
    return _size(memo)


def _too_large_step(name: str, size: int) -> AttemptFailed:
    return failed(
        "StepOutputTooLarge",
        f"step {name!r} returned {size} bytes; a step's output may be at most "
        f"{_mib(MAX_STEP_OUTPUT_BYTES)} — store large data elsewhere and return a reference",
        no_retry=True,
    )


def _size(value: Any) -> int:
    # measured as the run state stores it (runtime/runs.py: compact json.dumps)
    return len(json.dumps(value, separators=(",", ":")))


def _mib(limit: int) -> str:
    return f"{limit} bytes ({limit // MIB} MiB)"
