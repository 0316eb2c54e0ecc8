"""Notes: what a transition did, told to logs and metrics only once its transaction commits.

Transitions append notes to their `Tx`; the caller reports them after the commit, so a rolled
back transition is never logged or counted.
"""

from collections.abc import Mapping
from dataclasses import field
from typing import Any

from weir.platform.foundation.record_type import record

EVENT_ACCEPTED = "event.accepted"
RUN_STARTED = "run.started"
RUN_FINISHED = "run.finished"
STEP_SAVED = "step.saved"
CALL_FINISHED = "call.finished"
RETRY_SCHEDULED = "retry.scheduled"
APP_SYNCED = "app.synced"


@record
class Note:
    what: str
    run_id: str | None = None
    function_id: str | None = None
    event_id: str | None = None
    step_id: str | None = None
    fields: Mapping[str, Any] = field(default_factory=dict)

    def ids(self) -> dict[str, str]:
        found = {
            "run_id": self.run_id,
            "function_id": self.function_id,
            "event_id": self.event_id,
            "step_id": self.step_id,
        }
        return {name: value for name, value in found.items() if value}
