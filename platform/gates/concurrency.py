"""Concurrency: a step starts only when it fits every limit it carries (at most two).

A limit counts executing steps per key; `limit == 0` means no limit. The store counts
`in_use` (live leases) and asks here whether one more fits, and which key blocks if not.
"""

from __future__ import annotations

from collections.abc import Sequence

from weir.platform.foundation.record_type import record
from weir.platform.foundation.vocabulary import GateName
from weir.platform.gates.decisions import WaitReason, key_text, require_range

MAX_LIMITS = 2


@record(slots=True)
class Slot:
    """One limit as it stands now: its configured size, live count, and who it is."""

    limit: int
    in_use: int
    key: str = ""
    scope: str = "fn"

    def __post_init__(self) -> None:
        require_range("concurrency.limit", self.limit, 0)
        require_range("concurrency in_use", self.in_use, 0)


@record(slots=True)
class ConcurrencyDecision:
    fits: bool
    blocking: tuple[Slot, ...]
    wait: WaitReason | None


def has_room(slot: Slot) -> bool:
    return slot.limit == 0 or slot.in_use < slot.limit


def blocking(slots: Sequence[Slot]) -> tuple[Slot, ...]:
    """The limits that are full, in the order given."""
    return tuple(s for s in slots if not has_room(s))


def describe(slot: Slot) -> str:
    return f"{slot.scope} limit {slot.limit} full ({slot.in_use} running){key_text(slot.key)}"


def wait_reason(full: Sequence[Slot]) -> WaitReason:
    """No end time: a slot frees when some running step finishes."""
    words = f"{GateName.CONCURRENCY}: waiting for a free slot; " + "; ".join(
        describe(s) for s in full
    )
    return WaitReason(gate=GateName.CONCURRENCY, key=full[0].key, until_ms=None, words=words)


def check(slots: Sequence[Slot]) -> ConcurrencyDecision:
    if len(slots) > MAX_LIMITS:
        raise ValueError(f"concurrency: {len(slots)} limits given; allowed: at most {MAX_LIMITS}")
    full = blocking(slots)
    if not full:
        return ConcurrencyDecision(True, (), None)
    return ConcurrencyDecision(False, full, wait_reason(full))
