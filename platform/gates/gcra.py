"""The Generic Cell Rate Algorithm, exact in integer arithmetic.

`period / limit` is rarely a whole number of ms (1000 / 3), and float TATs drift over
thousands of emissions. So the meter counts in units where 1 ms = `limit` units: the emission
interval T is then exactly `period_ms` units and the tolerance τ = k·T is `k·period_ms`.
The TAT is stored in those units together with its scale, so a changed limit can be
re-expressed (rounding up: a meter may start late, never early). Admission times handed back
in ms are rounded up for the same reason.
"""

from __future__ import annotations

from weir.platform.foundation.record_type import record
from weir.platform.gates.decisions import require_range


@record(slots=True)
class Meter:
    """T = period_ms / limit; τ = tolerance × T + slack_ms (`tolerance` counts extra
    back-to-back cells; `slack_ms`, how late a cell may be taken without loss)."""

    period_ms: int
    limit: int
    tolerance: int
    slack_ms: int = 0

    def __post_init__(self) -> None:
        require_range("period_ms", self.period_ms, 1)
        require_range("limit", self.limit, 1)
        require_range("tolerance", self.tolerance, 0)
        require_range("slack_ms", self.slack_ms, 0)

    @property
    def scale(self) -> int:
        return self.limit  # units per ms

    @property
    def interval(self) -> int:
        return self.period_ms  # T in units

    @property
    def tau(self) -> int:
        return self.tolerance * self.period_ms + self.slack_ms * self.scale  # τ in units


@record(slots=True)
class GcraState:
    """Theoretical arrival time, `tat` units of 1/`scale` ms since the epoch."""

    tat: int
    scale: int


@record(slots=True)
class GcraCheck:
    """An admission test: `at_ms` is now when admitted, else the earliest ms it would be."""

    admitted: bool
    state: GcraState
    at_ms: int


@record(slots=True)
class GcraSlot:
    """A reserved cell: the ms it starts at (≥ now) and the meter after taking it."""

    start_ms: int
    state: GcraState
    waited: bool


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def stored_tat(meter: Meter, state: GcraState | None) -> int | None:
    """The stored TAT in this meter's units (re-expressed, rounding up, if the scale changed)."""
    if state is None:
        return None
    if state.scale == meter.scale:
        return state.tat
    return ceil_div(state.tat * meter.scale, state.scale)


def effective_tat(meter: Meter, state: GcraState | None, now_ms: int) -> int:
    """A meter never used, or whose TAT is past, behaves as TAT = now."""
    now_units = now_ms * meter.scale
    tat = stored_tat(meter, state)
    return now_units if tat is None else max(tat, now_units)


def check(meter: Meter, state: GcraState | None, now_ms: int) -> GcraCheck:
    """Admit a cell at now when TAT − now ≤ τ (then TAT += T); otherwise say when."""
    tat = effective_tat(meter, state, now_ms)
    earliest = tat - meter.tau
    if earliest <= now_ms * meter.scale:
        return GcraCheck(True, GcraState(tat + meter.interval, meter.scale), now_ms)
    unchanged = GcraState(tat, meter.scale)
    return GcraCheck(False, unchanged, ceil_div(earliest, meter.scale))


def reserve(meter: Meter, state: GcraState | None, now_ms: int) -> GcraSlot:
    """Take the next cell for a start that waits rather than being dropped.

    The cell's theoretical time is max(now, TAT − τ); since that is ≤ TAT the meter advances
    by exactly T from TAT, whatever the ms rounding of the reported start, so a long run of
    reservations never drifts.
    """
    tat = effective_tat(meter, state, now_ms)
    slot_units = max(now_ms * meter.scale, tat - meter.tau)
    start_ms = ceil_div(slot_units, meter.scale)
    return GcraSlot(start_ms, GcraState(tat + meter.interval, meter.scale), start_ms > now_ms)


def room(meter: Meter, state: GcraState | None, now_ms: int) -> int:
    """How many cells would be admitted back to back at now (0 when the next one waits)."""
    backlog = effective_tat(meter, state, now_ms) - now_ms * meter.scale
    headroom = meter.tau - backlog
    return 0 if headroom < 0 else headroom // meter.interval + 1
