"""What the claim-time gates (rolling windows, the throttle) say about one due start item."""

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)  # GO and BUSY are shared for the process's life
class Verdict:
    """`start`: lease the item. Otherwise `defer_to` ms, or None if another claimer holds the
    key right now (leave the item where it is)."""

    start: bool
    defer_to: int | None = None


GO = Verdict(start=True)
BUSY = Verdict(start=False)
