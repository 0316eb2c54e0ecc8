"""Weir's words, defined once: run and step statuses, history, wait and queue item kinds,
admission outcomes and the names of Weir's own events.

Each is a `StrEnum`: a member equals its string value, so the rows in the database, the JSON on
the wire and the GraphQL enums keep exactly these spellings (changing a value needs a
migration). This module imports nothing of Weir: every layer may use it (pyproject.toml puts it
at the bottom of the layers).
"""

from enum import StrEnum


class GateName(StrEnum):
    """The flow-control gates, as Weir names them in wait and skip reasons, gate-state rows,
    key namespaces, metrics and the UI. Stored: a value never changes."""

    BATCHING = "batching"
    CONCURRENCY = "concurrency"
    DEBOUNCE = "debounce"
    IDEMPOTENCY = "idempotency"
    LANE = "lane"  # FIFO lanes
    RATE_LIMIT = "rate_limit"
    ROLLING_WINDOW = "rolling_window"
    SCHEDULED = "scheduled"  # no gate of a config: a run waiting for its event's future ts
    SINGLETON = "singleton"
    THROTTLE = "throttle"


class RunStatus(StrEnum):
    """`runs.status`; also the GraphQL `FunctionRunStatus` and the UI's status filter."""

    QUEUED = "QUEUED"
    RUNNING = "RUNNING"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"
    SKIPPED = "SKIPPED"


# A run in one of these states never changes again (retention may delete it).
ENDED: tuple[RunStatus, ...] = (
    RunStatus.COMPLETED,
    RunStatus.FAILED,
    RunStatus.CANCELLED,
    RunStatus.SKIPPED,
)


class StepStatus(StrEnum):
    """`history.status`: how a call, sleep, wait or invoke went."""

    RUNNING = "RUNNING"  # an open span: the sleep, wait or invoke has not ended
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    TIMED_OUT = "TIMED_OUT"  # a wait for an event that never came
    WAITING = "WAITING"  # never stored: how the UI and GraphQL show an open span
    CANCELLED = "CANCELLED"  # never stored: an entry still open when its run ended


class HistoryKind(StrEnum):
    """`history.kind`: one entry of a run's timeline."""

    CALL = "call"  # one request to the app
    SLEEP = "sleep"
    WAIT = "wait"  # step.wait_for_event
    INVOKE = "invoke"
    AI = "ai"  # step.ai.infer: the request Weir makes to the model's API


class WaitKind(StrEnum):
    """`waits.kind`: what an open wait resumes when its event arrives."""

    WAIT = "wait"  # a paused step.wait_for_event
    CANCEL = "cancel"  # a cancel-on subscription
    INVOKE = "invoke"  # a parent waiting for the run it invoked to finish
    SIGNAL = "signal"  # a paused step.wait_for_signal: `event_name` is the signal, unique


class QueueKind(StrEnum):
    """`queue.kind`: a call to an app, or one of the timers `runtime/timers.py` handles."""

    EXEC = "exec"  # call the app for the run's next step
    SLEEP = "sleep"
    WAIT_TIMEOUT = "wait_timeout"
    INVOKE_TIMEOUT = "invoke_timeout"
    CRON = "cron"
    BATCH = "batch"  # flush a batch whose timeout passed
    DEBOUNCE = "debounce"  # a debounce window ended
    RUN_TIMEOUT = "run_timeout"  # timeouts.start / timeouts.finish
    AI = "ai"  # step.ai.infer: Weir calls the model's API itself
    LANE_HANDOFF = "lane_handoff"  # a lane's ended holder had a call in flight: look again
    PAUSE_BOUND = "pause_bound"  # a skip-mode pause outlived its bound: its held runs end


class EventOutcome(StrEnum):
    """`event_outcomes.outcome`: why an event started no run of a function it matched."""

    DUPLICATE_EVENT_ID = "duplicate_event_id"
    IDEMPOTENT = "idempotent"
    RATE_LIMITED = "rate_limited"
    DEBOUNCED = "debounced"
    BATCHED = "batched"
    SINGLETON_SKIPPED = "singleton_skipped"
    EXPRESSION_OVER_BUDGET = "expression_over_budget"
    # Effects on runs that already exist (the event matched a wait or a cancel-on, or a later
    # event took its place in a debounce window); `run_id` names the run.
    RESUMED = "resumed"
    CANCELLED_RUN = "cancelled_run"
    SUPERSEDED = "superseded"
    INVALID_SCOPE_KEY = "invalid_scope_key"  # a concurrency scope's key broke the key rules
    FUNCTION_PAUSED = "function_paused"  # the function was paused (skip mode, or a cron tick)


class CapacityKind(StrEnum):
    """`capacities.kind`: what a live capacity limits."""

    CONCURRENCY = "concurrency"  # slots of a concurrency key or scope
    METER = "meter"  # authorizations per window of a rolling window or shared meter


class CapacityAction(StrEnum):
    """`capacity_changes.action`: what changed a capacity row."""

    CREATED = "created"  # first declared by code: the capacity starts at the declared value
    DECLARED = "declared"  # code declares another value; the capacity stays (drift)
    SET = "set"  # an operator set the capacity
    RESET = "reset"  # an operator set it back to the declared value


# Users may not send events under this prefix: the names below are Weir's (as in Inngest).
SYSTEM_EVENT_PREFIX = "inngest/"


class PauseMode(StrEnum):
    """`function_pauses.mode`: what a paused function does with the events that trigger it."""

    SKIP = "skip"  # Inngest's: the events are stored, marked skipped, and start no run
    HOLD = "hold"  # the runs are created and wait, paused, until the function resumes


class InProgress(StrEnum):
    """`function_pauses.in_progress`: what pausing does to the runs already under way."""

    PAUSE = "pause"  # they wait at their next step (skip mode: ended after a bound)
    CANCEL = "cancel"  # they are cancelled now


class PauseAction(StrEnum):
    """`function_pause_changes.action`: what changed a function's paused state."""

    PAUSED = "paused"  # an operator paused it (or changed how it is paused)
    RESUMED = "resumed"  # an operator resumed it
    BOUND = "bound"  # a skip-mode pause outlived its bound: its held runs were cancelled


class SystemEvent(StrEnum):
    """Names of the events Weir itself emits."""

    FUNCTION_FINISHED = "inngest/function.finished"
    FUNCTION_FAILED = "inngest/function.failed"
    FUNCTION_CANCELLED = "inngest/function.cancelled"
    FUNCTION_INVOKED = "inngest/function.invoked"
    SCHEDULED_TIMER = "inngest/scheduled.timer"  # a cron tick


class Opcode(StrEnum):
    """An op an SDK answers with (docs/protocol.md §8): what the function did or asks for."""

    STEP_RUN = "StepRun"  # a step ran; its data is the result
    STEP = "Step"  # the older name of StepRun
    STEP_ERROR = "StepError"  # a step raised; retried while attempts remain
    STEP_FAILED = "StepFailed"  # a step raised with no retry left, or NonRetriableError
    STEP_PLANNED = "StepPlanned"  # a step found, to be run in a call of its own
    SLEEP = "Sleep"
    WAIT_FOR_EVENT = "WaitForEvent"
    WAIT_FOR_SIGNAL = "WaitForSignal"  # resumed by POST /v1/signals (docs/protocol.md)
    INVOKE_FUNCTION = "InvokeFunction"
    AI_GATEWAY = "AIGateway"  # step.ai.infer: Weir makes the request itself
    # Ending a checkpointed answer (steps first, run in the same request): its return value
    # or its error (docs/protocol.md, Checkpointed answers).
    RUN_COMPLETE = "RunComplete"
    RUN_ERROR = "RunError"


# Ops that report a step the call ran: its result, or its error.
RAN_OPS = (Opcode.STEP_RUN, Opcode.STEP, Opcode.STEP_ERROR, Opcode.STEP_FAILED)

# Ops whose step memo is stored as {"data": ...} or {"error": ...}: readers show what is inside.
WRAPPED_MEMO_OPS = (
    Opcode.STEP_RUN,
    Opcode.STEP_FAILED,
    Opcode.INVOKE_FUNCTION,
    Opcode.AI_GATEWAY,
    Opcode.WAIT_FOR_SIGNAL,  # {"data": {"signal", "data"}}, as Inngest stores it
)


class RunStateKind(StrEnum):
    """What an unfinished run is doing or waiting for (the read model `reads.run_state`):
    the same word in the UI, `GET /v1/runs/{id}` (`state.kind`) and GraphQL."""

    QUEUED = "queued"  # due (or scheduled) and waiting for a worker
    EXECUTING = "executing"  # a call to the app is in flight
    BACKOFF = "backoff"  # a failed attempt waits before the next one
    CONCURRENCY = "concurrency"  # due, but a concurrency key it needs is full
    THROTTLE = "throttle"  # its start waits for a throttle slot
    GATE = "gate"  # another gate holds it; `gate` names it (new gates appear here)
    PAUSED = "paused"  # its function is paused: it waits until the function resumes
    SLEEPING = "sleeping"
    WAITING_FOR_EVENT = "waiting_for_event"
    WAITING_FOR_SIGNAL = "waiting_for_signal"
    INVOKING = "invoking"  # waiting for the run it invoked
    ENDED = "ended"


class EventEffect(StrEnum):
    """What an event did to a run besides the outcomes admission records (`EventOutcome`):
    the event page lists both."""

    STARTED = "started"  # it triggered the run
    BATCHED_INTO = "batched_into"  # it is one of a batch run's events
