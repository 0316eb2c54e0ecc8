"""Parallel groups: all branches are discovered in one request and reported together.

`all-of` waits for every branch. A `race` returns the first branch that settled, and
records which one won as a tiny step of its own, so that a branch finishing later can
never change the winner on a later replay.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from weir.sdk._steps.execution import Interrupt, RunState, Skip, unexpected
from weir.sdk._steps.ops import STEP_RUN, Op

RACE = {"parallelMode": "race"}


@dataclass
class Branch:
    """What one branch did in this request."""

    value: Any = None
    error: Exception | None = None
    ops: list[Op] = field(default_factory=list)
    no_retry: bool = False
    skipped: str | None = None  # display name of the non-targeted step it stopped at

    @property
    def settled(self) -> bool:
        return not self.ops and self.skipped is None

    def result(self) -> Any:
        if self.error is not None:
            raise self.error
        return self.value


def interrupted(interrupt: Interrupt, race: bool) -> Branch:
    ops = [op.with_opts(RACE) for op in interrupt.ops] if race else interrupt.ops
    return Branch(ops=ops, no_retry=interrupt.no_retry)


def _pending(branches: list[Branch]) -> Interrupt | Skip | None:
    ops = [op for b in branches for op in b.ops]
    if ops:
        return Interrupt(ops, no_retry=any(b.no_retry for b in branches))
    skipped = [b.skipped for b in branches if b.skipped is not None]
    return Skip(skipped[0]) if skipped else None


def finish_all(branches: list[Branch]) -> tuple[Any, ...]:
    pending = _pending(branches)
    if pending is not None:
        raise pending
    return tuple(b.result() for b in branches)


def finish_race(state: RunState, race_id: str, branches: list[Branch]) -> Any:
    pending = _pending(branches)
    if state.target is not None and isinstance(pending, Interrupt):
        raise pending  # the targeted branch just ran: report it before anything else
    marker = state.slot(race_id)
    found, winner = state.lookup(marker)
    if found:
        return _recorded_winner(branches, winner, race_id).result()
    settled = [i for i, b in enumerate(branches) if b.settled]
    if not settled:
        raise pending or Skip(race_id)
    op = Op(STEP_RUN, marker, name=race_id)
    state.gate(op)
    state.ran(op, settled[0])  # records the winner: stops here unless checkpointed
    return branches[settled[0]].result()


def _recorded_winner(branches: list[Branch], winner: Any, race_id: str) -> Branch:
    ok = isinstance(winner, int) and 0 <= winner < len(branches)
    if not ok or not branches[winner].settled:
        raise unexpected(race_id)
    chosen: Branch = branches[winner]
    return chosen
