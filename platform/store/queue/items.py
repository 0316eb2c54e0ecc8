"""Queue items as records: a new item, a claimed one, the concurrency keys (`SlotLimit`) its
partition needs, lease tokens."""

import itertools
import secrets
from dataclasses import field
from typing import Any, NamedTuple

from weir.platform.foundation.record_type import record
from weir.platform.store.engine import json_text

TIMER_LANE = "~timers"
# Lease tokens: unique, not secret. A random prefix per process and a counter: no system call
# (and no hand-off of the GIL) per claimed item.
_TOKEN_PREFIX = secrets.token_hex(6)
_TOKEN_COUNTER = itertools.count(1)


def new_token() -> str:
    return f"{_TOKEN_PREFIX}{next(_TOKEN_COUNTER):x}"


class SlotLimit(NamedTuple):
    """One concurrency key a lane's items need a slot of: its hash, the limit its code declared,
    and the stored capacity that overrides the declared limit ("" for none: the declared one
    holds). A lane's limits are stored as JSON lists in this order."""

    key: str
    limit: int
    capacity: str = ""

    @property
    def unlimited(self) -> bool:
        """A declared 0 with no stored capacity: no slot to count."""
        return self.limit <= 0 and not self.capacity


def limits_from_json(pairs: Any) -> tuple[SlotLimit, ...]:
    """Lanes stored before capacities carry [key, limit] pairs; they read with no capacity."""
    return tuple(SlotLimit(str(p[0]), int(p[1]), str(p[2]) if len(p) > 2 else "") for p in pairs)


@record
class NewItem:
    kind: str
    available_at: int
    score: int
    lane: str
    run_id: str | None = None
    function_id: str | None = None
    step_id: str = "step"
    attempt: int = 0
    payload: dict[str, Any] = field(default_factory=dict)
    dedupe: str | None = None
    limits: tuple[SlotLimit, ...] = ()  # the concurrency keys of the lane


@record
class Claimed:
    id: int
    kind: str
    run_id: str | None
    function_id: str | None
    step_id: str
    attempt: int
    payload: dict[str, Any]
    lane: str
    token: str
    keys: tuple[str, ...]  # concurrency keys whose slots this item holds
    claimed_at: int
    fences: dict[str, int] = field(default_factory=dict)  # key hash -> token, keys of size 1
    limits: tuple[SlotLimit, ...] = ()  # the lane's limits, whose keys these are (`hand_on`)
    series: int = 0  # calls the row carried before this one (`enqueue_in_place`)


NO_LIMITS = "[]"
NO_PAYLOAD = "{}"


def limits_json(limits: tuple[SlotLimit, ...]) -> str:
    return json_text.dumps([list(pair) for pair in limits]) if limits else NO_LIMITS


class LeaseLost(Exception):
    """The item's lease was taken over (or the item removed): its outcome must not commit."""
