"""A future event `ts` schedules the run, as in Inngest: a run an event starts (not a batch's)
is due at the event's `ts` when that lies ahead of the moment it is created, and says so while
it waits. Ingest refuses a `ts` further ahead than `ingest.validate.TS_AHEAD_MS` (366 days),
so a run is never scheduled further out than that.
"""

from datetime import UTC, datetime
from typing import Any

from weir.platform.foundation.vocabulary import GateName
from weir.platform.gates.decisions import WaitReason, to_json
from weir.platform.runtime.flow.candidate import Candidate

GATE = GateName.SCHEDULED  # the run's `waiting.gate` while it waits for its event's ts


def start_at(cand: Candidate, created: int) -> tuple[int, dict[str, Any] | None]:
    """When the run is due, and why it waits if that is later than `created`."""
    ts = cand.events[0].get("ts") if cand.batch_id is None and cand.events else None
    if not isinstance(ts, int) or ts <= created:  # nearly every event: due at once
        return created, None
    return ts, to_json(waiting(ts))


def waiting(ts: int) -> WaitReason:
    when = datetime.fromtimestamp(ts / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
    words = f"scheduled: starts at its event's ts, {when} UTC (the event's ts lies ahead)"
    return WaitReason(gate=GATE, key="", until_ms=ts, words=words)
