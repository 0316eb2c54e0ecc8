"""Throttle: GCRA on run starts; a start over the limit waits for its slot, never dropped.

T = period / limit and τ = burst × T, so from idle 1 + burst runs start at once and then one
every period / limit. Two decisions per start, each on its own exact meter per key:
- `schedule_start` at admission reserves each start its slot in arrival order (the queue item
  is then available at `start_ms`): starts of a key are spread out and keep their order
  without the claimer ever bouncing them. No run starts before its slot.
- When the start item is claimed, the rule is checked on the starts that actually happened,
  so that it holds when runs really start, also after a restart or a stalled scheduler left
  many reserved slots in the past. A real start comes a little after its slot, by varying
  amounts, so two checks make "the rule" there: at most limit + burst starts in any window of
  one period (`window`, a strict sliding log: what the GCRA allows per period), and the GCRA
  itself with `CLAIM_SLACK_MS` more tolerance (`claim_start`), which spreads a backlog out one
  slot at a time again. A start claimed late (by up to the slack) therefore costs the next
  ones nothing, where a GCRA with τ = burst × T re-armed from each late start would: a
  throttle fed more than its rate would run below it.
A start that `claim_start` refuses is deferred: to the end of the line of starts already
deferred (in arrival order), or, when it is already in that line (ahead of its last start),
just to the meter's next cell, where it meets the others in queue order.
A reserved slot is not given back if its run is cancelled before starting (later starts
only get later, so no limit is ever exceeded).
"""

from __future__ import annotations

from dataclasses import dataclass

from weir.platform.foundation.record_type import record
from weir.platform.foundation.vocabulary import GateName
from weir.platform.gates import gcra
from weir.platform.gates.decisions import MS_PER_S, WaitReason, require_range, wait_until
from weir.platform.gates.rolling_window import WindowRule

# How late a start may be claimed after the moment the throttle allows it without the starts
# after it paying for it: more than the claimer's usual lag under load, far less than the
# gap of a restart (a backlog then still goes one slot at a time, after this much at once).
CLAIM_SLACK_MS = 100


@dataclass(frozen=True, slots=True)
class ThrottleConfig:
    """A throttle: declared once, as the function config holds it (`FunctionConfig.throttle`)
    and as this gate takes it."""

    limit: int
    period_ms: int
    burst: int = 0
    key: str | None = None  # a CEL expression over `event`: a meter per value

    def __post_init__(self) -> None:
        require_range("throttle.period (ms)", self.period_ms, MS_PER_S)
        require_range("throttle.limit", self.limit, 1)
        require_range("throttle.burst", self.burst, 0)

    @property
    def meter(self) -> gcra.Meter:
        """Admission's meter: the classic GCRA, τ = burst × T."""
        return gcra.Meter(self.period_ms, self.limit, self.burst)

    @property
    def claim_meter(self) -> gcra.Meter:
        """The claim's meter of actual starts: τ = burst × T + CLAIM_SLACK_MS, so that a
        start claimed that much after its cell loses nothing."""
        return gcra.Meter(self.period_ms, self.limit, self.burst, CLAIM_SLACK_MS)

    @property
    def window(self) -> WindowRule:
        """At most limit + burst starts in any window of one period: what the GCRA allows
        in a period, enforced on actual starts."""
        return WindowRule(self.limit + self.burst, self.period_ms)


@record(slots=True)
class ThrottleDecision:
    """`start_ms` == now when the start may go ahead at once; otherwise `wait` says why."""

    admitted: bool
    start_ms: int
    state: gcra.GcraState
    wait: WaitReason | None


def _waiting(key: str, until_ms: int) -> WaitReason:
    return wait_until(GateName.THROTTLE, key, until_ms, "waiting for a slot")


def schedule_start(
    config: ThrottleConfig, state: gcra.GcraState | None, now_ms: int, key: str = ""
) -> ThrottleDecision:
    """Reserve the next slot for a start arriving now; call in arrival order per key."""
    slot = gcra.reserve(config.meter, state, now_ms)
    wait = _waiting(key, slot.start_ms) if slot.waited else None
    return ThrottleDecision(not slot.waited, slot.start_ms, slot.state, wait)


@record(slots=True)
class StartMeter:
    """The meter of actual starts (`tat`) and the line of starts deferred at claim: the next
    free cell after all of them (`line_tat`) and the queue order (score, id) of the last one.
    TATs are in units of 1/`scale` ms, as in `gcra.GcraState`."""

    tat: int
    scale: int
    line_tat: int = 0
    line_score: int = 0
    line_id: int = 0

    @property
    def expires_ms(self) -> int:
        """Once both TATs are past the meter behaves as a fresh one."""
        return gcra.ceil_div(max(self.tat, self.line_tat), self.scale)


@record(slots=True)
class StartDecision:
    """`admitted`: the run starts now. Otherwise it is deferred to `start_ms`, and `wait`
    says why. `meter` is the key's StartMeter to store either way."""

    admitted: bool
    start_ms: int
    meter: StartMeter
    wait: WaitReason | None


def claim_start(
    config: ThrottleConfig,
    meter: StartMeter | None,
    now_ms: int,
    order: tuple[int, int],
    key: str = "",
) -> StartDecision:
    """May a claimed start, `order` = its (score, id) in the queue, begin now, by the claim's
    GCRA (`ThrottleConfig.claim_meter`)? If not, the ms it is deferred to: the end of the line
    of deferred starts, or, when it came before the last of them, the meter's next cell
    (where queue order puts it first). The period window is decided beside it (`window`)."""
    meter = _rescaled(config, meter)
    gauge = config.claim_meter
    check = gcra.check(gauge, gcra.GcraState(meter.tat, meter.scale), now_ms)
    if check.admitted:
        admitted = StartMeter(check.state.tat, meter.scale, *_line_of(meter))
        return StartDecision(True, now_ms, admitted, None)
    if meter.line_tat > meter.tat and order < (meter.line_score, meter.line_id):
        return StartDecision(False, check.at_ms, meter, _waiting(key, check.at_ms))
    end = gcra.GcraState(max(meter.tat, meter.line_tat), meter.scale)
    slot = gcra.reserve(gauge, end, now_ms)
    line = StartMeter(meter.tat, meter.scale, slot.state.tat, *order)
    return StartDecision(False, slot.start_ms, line, _waiting(key, slot.start_ms))


def _rescaled(config: ThrottleConfig, meter: StartMeter | None) -> StartMeter:
    """The stored meter in this config's units (a changed limit changes them); idle if none."""
    gauge = config.meter
    if meter is None:
        return StartMeter(tat=0, scale=gauge.scale)
    tat = gcra.stored_tat(gauge, gcra.GcraState(meter.tat, meter.scale)) or 0
    line = gcra.stored_tat(gauge, gcra.GcraState(meter.line_tat, meter.scale)) or 0
    return StartMeter(tat, gauge.scale, line, meter.line_score, meter.line_id)


def _line_of(meter: StartMeter) -> tuple[int, int, int]:
    return meter.line_tat, meter.line_score, meter.line_id


def describe(config: ThrottleConfig) -> str:
    """The effective start pattern, for the function's page."""
    at_once = 1 + config.burst
    every, rest = divmod(config.period_ms, config.limit)
    interval = f"{every} ms" if rest == 0 else f"{config.period_ms}/{config.limit} ms"
    return f"{at_once} at once from idle, then one every {interval}"
