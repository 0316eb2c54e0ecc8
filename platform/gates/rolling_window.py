"""Strict rolling windows: at most `limit` run authorizations in any `window` ms ending now.

A scope (a function's window and key, or a shared meter and key) keeps a log of its
authorizations, numbered 0, 1, 2, ... in the order they were given, with their times. Times
never go backwards in the log (a clock behind the last entry counts as the last entry's time),
so "at most `limit` in any window" is one comparison: authorization number n may happen at t
only if number n - limit happened at or before t - window. The store fetches that one entry;
entries older than the window may be pruned (a missing entry is one that left the window).

A refused run waits until the entry that blocks it leaves the window; it does not poll. Runs
refused while others already wait take seats in a line, so each is re-armed at the moment its
own turn can come (seat s waits for entry s - limit, or, further back, for the seat `limit`
ahead of it plus one window): a full scope with a thousand waiting runs wakes one run per
freed authorization, not all of them. A run seated in the line that comes back and still finds
no room (another run took the turn) is re-armed for the next freed entry, ahead of the line.
A run needing several windows is decided in each and then `combine`d: all admit it, or it
waits for the latest reopening. With one window or several, runs start in queue order at the
first moment every window has room (tested against that schedule for any arrivals).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from weir.platform.foundation.record_type import record
from weir.platform.foundation.vocabulary import GateName
from weir.platform.gates.decisions import (
    MS_PER_DAY,
    MS_PER_S,
    WaitReason,
    clock_text,
    key_text,
    require_range,
)

MAX_LIMIT = 100_000
MIN_WINDOW_MS = MS_PER_S
MAX_WINDOW_MS = MS_PER_DAY


@record(slots=True)
class WindowRule:
    """At most `limit` authorizations in any `window_ms` ms: the rule the log enforces. A
    throttle's window uses it as is (its bounds are the throttle's own)."""

    limit: int
    window_ms: int

    def __post_init__(self) -> None:
        require_range("window limit", self.limit, 1)
        require_range("window (ms)", self.window_ms, 1)


@record(slots=True)
class WindowConfig(WindowRule):
    """A declared rolling window, within the bounds a function may declare."""

    def __post_init__(self) -> None:
        require_range("rolling_window.limit", self.limit, 1, MAX_LIMIT)
        require_range("rolling_window.window (ms)", self.window_ms, MIN_WINDOW_MS, MAX_WINDOW_MS)


@record(slots=True)
class Ledger:
    """A scope's log header. `count` authorizations were given (numbered 0..count-1), the
    last at `last_at`. Numbers count..line_end-1 are promised to runs waiting in line, the
    last of them queued at (line_score, line_id)."""

    count: int = 0
    last_at: int = 0
    line_end: int = 0
    line_score: int = 0
    line_id: int = 0


@record(slots=True)
class Decision:
    """`admitted`: authorization number `ledger.count - 1` is given at `at_ms` (store it).
    Otherwise the run waits until `at_ms`; `wait` says why. `ledger` is what to store."""

    admitted: bool
    at_ms: int
    ledger: Ledger
    wait: WaitReason | None


def probes(config: WindowRule, ledger: Ledger) -> tuple[int, ...]:
    """The log entries (by number) `decide` needs: the one blocking the next authorization,
    and the one the next seat in line waits for. At most two, whatever the limit."""
    head = ledger.count - config.limit
    seat_base, _ = _seat_base(config, ledger, _next_seat(ledger))
    return tuple(sorted({n for n in (head, seat_base) if n >= 0}))


def decide(
    config: WindowRule,
    ledger: Ledger | None,
    now_ms: int,
    order: tuple[int, int],
    times: Mapping[int, int],
    key: str = "",
    rate_name: str | None = None,
    gate: str = GateName.ROLLING_WINDOW,
) -> Decision:
    """May a run queued at `order` (score, id) be authorized now? `times` maps entry numbers
    (those `probes` named) to their times; a missing one has left the window."""
    ledger = ledger or Ledger()
    at = max(now_ms, ledger.last_at)
    head = ledger.count - config.limit
    oldest = times.get(head) if head >= 0 else None
    if oldest is None or oldest <= at - config.window_ms:
        return Decision(True, at, replace(ledger, count=ledger.count + 1, last_at=at), None)
    in_line = ledger.line_end > ledger.count and order <= (ledger.line_score, ledger.line_id)
    if in_line:  # its turn was taken: the next freed entry is its
        until = oldest + config.window_ms
        return Decision(False, until, ledger, waiting(config, until, key, rate_name, gate))
    seat = _next_seat(ledger)
    until = _seat_time(config, ledger, seat, times, at)
    seated = replace(ledger, line_end=seat + 1, line_score=order[0], line_id=order[1])
    return Decision(False, until, seated, waiting(config, until, key, rate_name, gate))


@record(slots=True)
class Combined:
    """A run needing several windows: it starts only if every one admits it (then each
    decision's ledger is stored, with its authorization). Otherwise it waits until the latest
    reopening, and only the windows that set that time keep the run's seat (`save`): a seat in
    a window that would reopen sooner would hold back the runs behind it there."""

    admitted: bool
    until_ms: int  # when a refused run is due again (0 when admitted)
    save: tuple[int, ...]
    wait: WaitReason | None


def combine(decisions: Sequence[Decision]) -> Combined:
    refused = [i for i, d in enumerate(decisions) if not d.admitted]
    if not refused:
        return Combined(True, 0, tuple(range(len(decisions))), None)
    until = max(decisions[i].at_ms for i in refused)
    binding = tuple(i for i in refused if decisions[i].at_ms == until)
    return Combined(False, until, binding, decisions[binding[0]].wait)


def _next_seat(ledger: Ledger) -> int:
    return max(ledger.line_end, ledger.count)


def _seat_base(config: WindowRule, ledger: Ledger, seat: int) -> tuple[int, int]:
    """(j, k): seat waits k windows after log entry j, the given entry `limit`·k before it."""
    behind = seat - ledger.count  # seats ahead of it in line
    k = behind // config.limit + 1
    return seat - k * config.limit, k


def _seat_time(
    config: WindowRule, ledger: Ledger, seat: int, times: Mapping[int, int], at: int
) -> int:
    base, k = _seat_base(config, ledger, seat)
    entry = times.get(base) if base >= 0 else None
    first = at if entry is None else max(entry + config.window_ms, at)
    return first + (k - 1) * config.window_ms


def waiting(
    config: WindowRule,
    until_ms: int,
    key: str,
    rate_name: str | None,
    gate: str = GateName.ROLLING_WINDOW,
) -> WaitReason:
    """Why a run waits: which window (of which gate), on which meter and key, until when."""
    rule = f"{config.limit} per {config.window_ms} ms window is full"
    words = f"{gate}: {rule} until {clock_text(until_ms)}{scope_words(rate_name, key)}"
    return WaitReason(gate=gate, key=key, until_ms=until_ms, words=words)


def scope_words(rate_name: str | None, key: str) -> str:
    """How a scope is named in reasons: " (meter 'stripe', key 'acme')"."""
    if rate_name is None:
        return key_text(key)
    keyed = f", key {key!r}" if key else ""
    return f" (meter {rate_name!r}{keyed})"


def allowed_in_any_window(starts: list[int], config: WindowRule) -> bool:
    """The rule itself, over a sorted list of authorization times (for audits and tests)."""
    gap = config.limit
    return all(starts[i + gap] - starts[i] >= config.window_ms for i in range(len(starts) - gap))
