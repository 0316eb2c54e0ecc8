"""Whatever ops an app answers, applying them never raises out of the scheduler, and what
they leave behind can be served: the run's next request still builds as canonical JSON and
its output reads back as strict JSON. Before, a bad field raised inside the write and the
call came back at every lease, forever.

Real parts: classify() reads the answer, outcomes.apply() writes it to a SQLite store, and
the harness then fires every timer (sleeps, wait and invoke timeouts) that falls due.
"""

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import delete
from weir.platform.executor.driver import load_call_state
from weir.platform.executor.request import build_body
from weir.platform.executor.response import RawResponse, classify
from weir.platform.runtime import outcomes
from weir.platform.store import queue as q
from weir.platform.store.engine.schema import queue

from tests.support.flow_harness import LEASE_MS, Harness, config

YEAR_MS = 366 * 24 * 3600 * 1000
NUMBERS = (
    st.integers() | st.sampled_from([2**53 - 1, 2**53, -(2**53), 2**64, 10**400]) | st.floats()
)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | NUMBERS | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=8,
)
TEXTS = st.text(max_size=80) | st.sampled_from(
    [
        "",
        "x" * 65,
        "a\x00b",
        "a\nb",
        "²",
        "2030-01-02T03:04:05Z",
        "2030-01-02T03:04:05",
        "0001-01-01T00:00:00-12:00",
        "9999-12-31T23:59:59-12:00",
        "20000-01-01T00:00:00Z",
        "app/go",
        "fn",
    ]
)
DURATIONS = st.sampled_from(
    ["30s", "1.5h", "0", "500ms", "1 fortnight", "9" * 60 + "w", "²s", "0.0001ms", "", "-1s"]
)
OPT_VALUES = JSON_VALUES | DURATIONS | TEXTS
OPTS = st.dictionaries(
    st.sampled_from(
        ["duration", "timeout", "if", "event", "function_id", "payload", "parallelMode", "x"]
    ),
    OPT_VALUES
    | st.fixed_dictionaries({}, optional={"data": JSON_VALUES, "v": JSON_VALUES})
    | st.sampled_from(["event.data.x == async.data.x", "event.data ==", "race"]),
)
OPS = st.fixed_dictionaries(
    {
        # RunComplete and RunError end a checkpointed answer (StepRun ops, then one of them)
        "op": st.sampled_from([*sorted(outcomes.KNOWN_OPS), "RunComplete", "RunError", "Nope"]),
        "id": TEXTS | JSON_VALUES,
    },
    optional={
        "name": TEXTS | JSON_VALUES,
        "displayName": TEXTS | JSON_VALUES,
        "opts": OPTS | JSON_VALUES,
        "data": JSON_VALUES,
        "error": st.fixed_dictionaries(
            {}, optional={"name": JSON_VALUES, "message": TEXTS, "stack": JSON_VALUES}
        )
        | JSON_VALUES,
    },
)


@pytest.fixture
def harness(database_url: str) -> Harness:
    return Harness(database_url, config("fn"))


def _claim_new_call(h: Harness, run_id: str) -> q.Claimed:
    with h.engine.begin() as conn:
        claimed = q.claim(conn, h.now, 1000, LEASE_MS)
    return next(i for i in claimed if i.run_id == run_id and i.kind == "exec")


def _apply(h: Harness, item: q.Claimed, body: bytes, status: int) -> None:
    outcome = classify(RawResponse(status, {"x-inngest-sdk": "py:v1"}, body), h.now)
    fn = h.registry.by_id["fn"]
    with h.tx() as tx:
        outcomes.apply(tx, item, fn, outcome, outcomes.Timing(h.now, h.now))


def _servable(h: Harness, run_id: str) -> None:
    with h.engine.connect() as conn:
        state = load_call_state(conn, run_id)
    assert state is not None
    build_body(state, fn_id="fn", step_id="step", attempt=0, max_attempts=1)  # canonical JSON
    if state.run.ended:
        json.dumps(state.run.output, allow_nan=False)  # what the API answers


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(OPS, min_size=1, max_size=4), st.sampled_from([200, 206]))
def test_any_ops_apply_without_raising_and_leave_a_servable_run(
    harness: Harness, ops: list[dict[str, Any]], status: int
) -> None:
    h = harness
    h.send(h.now)
    run_id = h.runs()[-1].id
    item = _claim_new_call(h, run_id)
    body = json.dumps(ops if status == 206 else ops[0].get("data")).encode()
    _apply(h, item, body, status)
    h.advance(h.now + 2 * YEAR_MS)  # every wait and invoke timeout, most sleeps
    _servable(h, run_id)
    _drop_calls(h)


def _drop_calls(h: Harness) -> None:
    # the calls ops planned are never answered here: dropped so that their leases, expiring
    # every few simulated days, do not make each example slower than the one before
    with h.engine.begin() as conn:
        conn.execute(delete(queue).where(queue.c.kind == "exec"))


def test_a_checkpointed_answer_repeating_or_resending_steps_keeps_the_first_results(
    harness: Harness,
) -> None:
    h = harness
    h.send(h.now)
    run_id = h.runs()[-1].id

    def step(step_id: str, data: Any) -> dict[str, Any]:
        return {"op": "StepRun", "id": step_id, "name": step_id, "data": data}

    _apply(h, _claim_new_call(h, run_id), json.dumps([step("a", 1), step("a", 2)]).encode(), 206)
    later = [step("a", 3), step("b", 4), {"op": "RunComplete", "id": "c", "data": "done"}]
    _apply(h, _claim_new_call(h, run_id), json.dumps(later).encode(), 206)
    with h.engine.connect() as conn:
        state = load_call_state(conn, run_id)
    assert state is not None and state.run.ended and state.run.output == "done"
    assert [(s.step_id, s.memo) for s in state.memos] == [("a", {"data": 1}), ("b", {"data": 4})]
