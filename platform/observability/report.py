"""Telling operators what committed: one log line and the metrics of each note."""

import logging
from collections.abc import Callable, Iterable
from typing import Any

from weir.platform.foundation.vocabulary import Opcode, RunStatus
from weir.platform.observability import logs
from weir.platform.observability import notes as n
from weir.platform.observability.metrics import Metrics

log = logging.getLogger("weir.runs")
QUIET = logging.DEBUG


def report(notes: Iterable[n.Note], metrics: Metrics, slug: Callable[[str], str]) -> None:
    said: list[tuple[int, str, logs.Fields, logs.Fields]] = []
    for note in notes:
        function = slug(note.function_id) if note.function_id else ""
        metrics.record(note, function)
        level, message = describe(note)
        if log.isEnabledFor(level):
            fields: dict[str, Any] = {"function": function} if function else {}
            said.append((level, message, note.ids(), {**fields, **note.fields}))
    logs.lines(log, said)


def describe(note: n.Note) -> tuple[int, str]:
    """The level and words of a note's log line."""
    if note.what == n.RUN_FINISHED:
        status = str(note.fields.get("status", ""))
        level = logging.WARNING if status == RunStatus.FAILED else logging.INFO
        return level, f"run {status.lower()}"
    if note.what == n.STEP_SAVED:  # a completed step is on the run's page; a line per step
        # at info would be thousands a second under load (a checkpointed run saves ten at once)
        failed = note.fields.get("op") == Opcode.STEP_FAILED
        return (logging.WARNING if failed else QUIET), (
            "step failed" if failed else "step completed"
        )
    return _WORDS.get(note.what, (QUIET, note.what))


_WORDS = {
    n.EVENT_ACCEPTED: (QUIET, "event accepted"),
    n.RUN_STARTED: (logging.INFO, "run started"),
    n.CALL_FINISHED: (QUIET, "call answered"),
    n.RETRY_SCHEDULED: (logging.WARNING, "call failed; retrying"),
    n.APP_SYNCED: (logging.INFO, "app synced"),
}
