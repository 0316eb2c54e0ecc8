"""The events a failed run emits carry Inngest's StandardError; the run's output keeps the
error as the SDK sent it."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import select
from weir.platform.foundation.vocabulary import SystemEvent
from weir.platform.ingest.validate import LARGE_EVENT_BYTES, parse_large_body
from weir.platform.runtime import events as events_ops
from weir.platform.runtime import runs
from weir.platform.store.engine.schema import events
from weir.platform.store.records import runs as run_records

from tests.support.flow_harness import EVENT, NOON, Harness

SDK_ERROR = {"name": "ValueError", "message": "bad", "stack": "Traceback …", "code": "E_BAD"}


def emitted(h: Harness, name: str) -> dict[str, Any]:
    with h.engine.connect() as conn:
        [payload] = conn.execute(select(events.c.payload).where(events.c.name == name)).all()
    data: dict[str, Any] = json.loads(payload[0])["data"]
    return data


def fail(h: Harness, error: dict[str, Any], http_status: int, no_retry: bool = False) -> str:
    h.send(NOON)
    run_id = str(h.runs()[0].id)
    with h.tx(NOON + 10) as tx:
        runs.finish_run(
            tx, run_id, "FAILED", None, error=error, http_status=http_status, no_retry=no_retry
        )
    return run_id


def test_failed_events_carry_the_status_name_message_and_stack(database_url: str) -> None:
    h = Harness(database_url)
    run_id = fail(h, SDK_ERROR, 500)
    standard = {
        "error": "invalid status code: 500",
        "name": "ValueError",
        "message": "bad",
        "stack": "Traceback …",
    }
    assert emitted(h, SystemEvent.FUNCTION_FAILED)["error"] == standard
    assert emitted(h, SystemEvent.FUNCTION_FINISHED)["error"] == standard
    assert h.run(run_id).output == SDK_ERROR  # the run's output is unchanged


def test_an_answer_that_said_not_to_retry_is_a_non_retriable_error(database_url: str) -> None:
    # Inngest's HTTP driver replaces the status error with "NonRetriableError" then
    h = Harness(database_url)
    run_id = fail(h, SDK_ERROR, 500, no_retry=True)
    assert emitted(h, SystemEvent.FUNCTION_FAILED)["error"]["error"] == "NonRetriableError"
    assert emitted(h, SystemEvent.FUNCTION_FINISHED)["error"]["error"] == "NonRetriableError"
    assert h.run(run_id).output == SDK_ERROR


def test_a_failure_without_an_answer_repeats_its_message(database_url: str) -> None:
    h = Harness(database_url)
    fail(h, {"name": "ConnectionError", "message": "calling the app failed"}, 0)
    assert emitted(h, SystemEvent.FUNCTION_FAILED)["error"] == {
        "error": "calling the app failed",
        "name": "ConnectionError",
        "message": "calling the app failed",
    }


def test_a_large_trigger_event_ends_up_whole_in_the_finished_event(database_url: str) -> None:
    # The run ends in the transaction that created it: its trigger event is held there as a
    # Document (a large event, kept as bytes), which must not be written out as it stands.
    h = Harness(database_url)
    big = {"blob": "x" * (LARGE_EVENT_BYTES + 10), "n": 1}
    body = json.dumps({"name": EVENT, "data": big}).encode()
    with h.tx(NOON) as tx:
        [event_id] = events_ops.accept(tx, parse_large_body(body, NOON))
        [run] = run_records.runs_for_event(tx.conn, event_id)
        runs.cancel_run(tx, run.id, "at once")
    finished = emitted(h, SystemEvent.FUNCTION_FINISHED)
    assert finished["event"]["data"] == big
    assert finished["events"][0]["id"] == event_id
