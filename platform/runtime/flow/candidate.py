"""What flows through the gates: one (event(s), function) pair on its way to a run."""

from __future__ import annotations  # a candidate lists the candidates it released

from dataclasses import dataclass, field
from typing import Any

from weir.platform.registry import Function


@dataclass
class Candidate:
    """One (event(s), function) pair on its way through the gates."""

    fn: Function
    event_ids: list[str]
    events: list[dict[str, Any]]
    received_at: int
    warnings: list[str] = field(default_factory=list)
    batch_id: str | None = None
    cron: str | None = None
    original_run_id: str | None = None
    skip_gates: frozenset[str] = frozenset()  # flushes of batches and debounces skip re-entry
    # Candidates a gate let out while taking this one (a batch it filled, a debounce window
    # found due): admission starts them, so no gate needs to call back into admission.
    released: list[Candidate] = field(default_factory=list)

    @property
    def event(self) -> dict[str, Any]:
        return self.events[0]
