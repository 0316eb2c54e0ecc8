"""Notes of real transitions, reported after the commit: log lines with ids, and counters."""

import asyncio
import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest
from sqlalchemy import Engine
from weir.platform.functions import EventTrigger, FunctionConfig
from weir.platform.ingest.validate import IncomingEvent
from weir.platform.observability import notes
from weir.platform.observability.metrics import Metrics
from weir.platform.observability.report import report
from weir.platform.registry import Function, Registry
from weir.platform.runtime import events, finish_hooks, runs
from weir.platform.runtime.tx import Tx
from weir.platform.service import Platform
from weir.platform.settings import Settings
from weir.platform.store.database import make_engine
from weir.platform.store.migrate import upgrade
from weir.platform.store.records import runs as run_records

NOON = 1_767_268_800_000
T = TypeVar("T")


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    engine = make_engine(f"sqlite:///{tmp_path / 'weir.db'}")
    upgrade(engine)
    yield engine
    engine.dispose()


def registry() -> Registry:
    cfg = FunctionConfig(
        slug="app-fn",
        name="fn",
        url="http://app.test/api?fnId=app-fn&stepId=step",
        retries=0,
        triggers=(EventTrigger("t/go", None),),
    )
    reg = Registry()
    reg.add(Function(id="F1", app_id="app", slug="app-fn", config=cfg, version=1))
    return reg


def transition(engine: Engine, job: Callable[[Tx], T]) -> tuple[T, list[notes.Note]]:
    with engine.begin() as conn:
        tx = Tx(conn, NOON, registry())
        result = job(tx)
        finish_hooks.settle(tx)  # as Platform.write does
        return result, tx.notes


def send(engine: Engine) -> tuple[str, str, list[notes.Note]]:
    incoming = IncomingEvent("t/go", {}, None, NOON, {}, None)
    ids, said = transition(engine, lambda tx: events.accept(tx, [incoming]))
    event_id = ids[0]
    with engine.connect() as conn:
        [run] = run_records.runs_for_event(conn, event_id)
    return event_id, run.id, said


def test_an_accepted_event_is_noted_with_its_id(engine: Engine) -> None:
    event_id, _, said = send(engine)
    assert [(n.what, n.event_id, n.fields["name"]) for n in said] == [
        (notes.EVENT_ACCEPTED, event_id, "t/go")
    ]


def test_a_run_is_noted_with_run_function_and_event_ids_as_it_moves(engine: Engine) -> None:
    event_id, run_id, _ = send(engine)

    def start_step_finish(tx: Tx) -> None:
        runs.mark_started(tx, run_records.get_run(tx.conn, run_id), NOON)
        runs.resolve_step(tx, run_id, "s1", {"data": 1}, op="StepRun", name="first")
        runs.finish_run(tx, run_id, "FAILED", None, error={"name": "E", "message": "bad"})

    _, said = transition(engine, start_step_finish)
    assert [n.what for n in said][:3] == [notes.RUN_STARTED, notes.STEP_SAVED, notes.RUN_FINISHED]
    for note in said[:3]:
        assert (note.run_id, note.function_id, note.event_id) == (run_id, "F1", event_id)
    assert said[1].step_id == "s1" and said[1].fields["op"] == "StepRun"
    assert said[2].fields == {"status": "FAILED", "error": "bad"}


def test_report_counts_and_logs_each_note_with_its_ids(
    engine: Engine, caplog: pytest.LogCaptureFixture
) -> None:
    event_id, run_id, accepted = send(engine)
    _, finished = transition(engine, lambda tx: runs.finish_run(tx, run_id, "COMPLETED", 7))
    metrics = Metrics()
    with caplog.at_level(logging.INFO, logger="weir.runs"):
        report([*accepted, *finished], metrics, lambda fid: {"F1": "app-fn"}[fid])
    sample = metrics.registry.get_sample_value
    assert sample("weir_events_accepted_total", {"source": "sent"}) == 1
    # the run's end emitted inngest/function.finished, an event of Weir's own
    assert sample("weir_events_accepted_total", {"source": "internal"}) == 1
    assert sample("weir_runs_finished_total", {"function": "app-fn", "status": "completed"}) == 1
    [line] = [r for r in caplog.records if r.getMessage() == "run completed"]
    assert line.ids == {"run_id": run_id, "function_id": "F1", "event_id": event_id}  # type: ignore[attr-defined]
    assert line.fields["function"] == "app-fn"  # type: ignore[attr-defined]


def test_a_completed_step_logs_at_debug_and_a_failed_one_warns(
    caplog: pytest.LogCaptureFixture,
) -> None:
    said = [
        notes.Note(notes.STEP_SAVED, run_id="R", function_id="F", fields={"op": "StepRun"}),
        notes.Note(notes.STEP_SAVED, run_id="R", function_id="F", fields={"op": "StepFailed"}),
    ]
    with caplog.at_level(logging.INFO, logger="weir.runs"):
        report(said, Metrics(), str)
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [("WARNING", "step failed")]
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="weir.runs"):
        report(said, Metrics(), str)
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        ("DEBUG", "step completed"),
        ("WARNING", "step failed"),
    ]


def test_a_failed_run_logs_a_warning_and_a_retry_counts(caplog: pytest.LogCaptureFixture) -> None:
    metrics = Metrics()
    said = [
        notes.Note(notes.RETRY_SCHEDULED, run_id="R", function_id="F", fields={"attempt": 1}),
        notes.Note(notes.RUN_FINISHED, run_id="R", function_id="F", fields={"status": "FAILED"}),
        notes.Note(notes.CALL_FINISHED, run_id="R", function_id="F", fields={"duration_ms": 250}),
    ]
    with caplog.at_level(logging.INFO, logger="weir.runs"):
        report(said, metrics, str)
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        ("WARNING", "call failed; retrying"),
        ("WARNING", "run failed"),
    ]
    sample = metrics.registry.get_sample_value
    assert sample("weir_step_retries_total", {"function": "F"}) == 1
    assert sample("weir_step_call_duration_seconds_count", {"function": "F"}) == 1
    assert sample("weir_step_call_duration_seconds_sum", {"function": "F"}) == 0.25
    assert sample("weir_step_call_duration_seconds_bucket", {"function": "F", "le": "0.1"}) == 0
    assert sample("weir_step_call_duration_seconds_bucket", {"function": "F", "le": "0.25"}) == 1


async def test_a_transition_that_rolls_back_is_neither_counted_nor_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    weir = Platform(Settings(database_url=f"sqlite:///{tmp_path / 'weir.db'}"))
    incoming = IncomingEvent("t/go", {}, None, NOON, {}, None)

    def accept_then_fail(tx: Tx) -> None:
        events.accept(tx, [incoming])
        raise RuntimeError("the transition fails after noting")

    try:
        with caplog.at_level(logging.DEBUG, logger="weir.runs"):
            with pytest.raises(RuntimeError):
                await weir.write(accept_then_fail)
            assert (
                weir.metrics.registry.get_sample_value(
                    "weir_events_accepted_total", {"source": "sent"}
                )
                is None
            )
            ids = await weir.write(lambda tx: events.accept(tx, [incoming]))
            await asyncio.sleep(0)  # the report follows on the loop's next turn
    finally:
        weir.db.close()
    assert (
        weir.metrics.registry.get_sample_value("weir_events_accepted_total", {"source": "sent"})
        == 1
    )
    accepted = [r for r in caplog.records if r.getMessage() == "event accepted"]
    assert [r.ids["event_id"] for r in accepted] == ids  # type: ignore[attr-defined]
