"""An AI answer that fits a step but would take the run's saved state past its limit is saved
as the step's error (no retry: asking again returns the same size), never as run state."""

from sqlalchemy import update
from weir.platform.executor.ai_infer import AIResult
from weir.platform.executor.answer_limits import MAX_RUN_STATE_BYTES
from weir.platform.executor.response import Op
from weir.platform.foundation.vocabulary import Opcode
from weir.platform.runtime.steps import ai_infer as ai_steps
from weir.platform.store import queue as q
from weir.platform.store.engine.schema import runs
from weir.platform.store.records import runs as run_records
from weir.platform.store.records import steps as step_records

from tests.support.flow_harness import NOON, Harness

ASK = Op(Opcode.AI_GATEWAY, "ask-hash", "ask", "ask", {"url": "http://llm.test/v1"}, None, None)


def _answer(h: Harness, run_id: str, state_bytes: int, data: object) -> dict[str, object]:
    with h.tx(NOON + 1) as tx:
        tx.conn.execute(update(runs).where(runs.c.id == run_id).values(state_bytes=state_bytes))
        run = run_records.get_run(tx.conn, run_id)
        assert run is not None
        ai_steps.open_call(tx, h.registry.by_id[run.function_id], run, ASK)
        (item,) = [i for i in q.claim(tx.conn, NOON + 1, 10, 60_000) if i.kind == "ai"]
        ai_steps.apply_result(tx, item, h.registry.by_id[run.function_id], AIResult(data=data))
    with h.tx() as tx:
        saved = {s.step_id: s.memo for s in step_records.list_steps(tx.conn, run_id)}
        assert not h.queued("ai")  # done, not queued again
    memo = saved["ask-hash"]
    assert isinstance(memo, dict)
    return memo


def test_an_answer_within_the_runs_state_limit_is_saved(database_url: str) -> None:
    h = Harness(database_url)
    h.send(NOON)
    (run,) = h.runs()
    assert _answer(h, run.id, 1000, {"text": "hi"}) == {"data": {"text": "hi"}}


def test_an_answer_past_the_runs_state_limit_is_the_steps_error(database_url: str) -> None:
    h = Harness(database_url)
    h.send(NOON)
    (run,) = h.runs()
    memo = _answer(h, run.id, MAX_RUN_STATE_BYTES - 100, {"text": "x" * 5000})
    assert "data" not in memo
    error = memo["error"]
    assert isinstance(error, dict) and error["name"] == "RunStateTooLarge"
    assert "return less data" in str(error["message"])
    added = h.run(run.id).state_bytes - (MAX_RUN_STATE_BYTES - 100)
    assert 0 < added < 500  # the short error, not the answer
