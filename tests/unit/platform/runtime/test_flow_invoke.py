"""An invoke whose target refuses the event (rate limit, ...) fails the caller's step at once,
instead of leaving it to wait for its invoke timeout."""

from dataclasses import replace

from weir.platform.foundation.vocabulary import SystemEvent
from weir.platform.functions import EventTrigger, RateLimit
from weir.platform.runtime import events
from weir.platform.runtime.steps import invoke
from weir.platform.store.records import steps as step_records

from tests.support.flow_harness import NOON, Harness, config


def test_a_refused_invoke_fails_the_callers_step_with_the_reason(database_url: str) -> None:
    target = replace(
        config("target", rate_limit=RateLimit(1, 3_600_000, None)),
        triggers=(EventTrigger("app/other", None),),
    )
    h = Harness(database_url, config("parent"), target)
    h.send(NOON)
    parent = next(r for r in h.runs("parent"))
    opts = {"function_id": "target", "payload": {"data": {}}}
    with h.tx(NOON + 1) as tx:
        for step_id, name in (("s1", "first"), ("s2", "second")):
            data = invoke.start_invoke(tx, parent, "target", step_id, name, opts, None)
            events.emit(tx, SystemEvent.FUNCTION_INVOKED, data)
    with h.tx() as tx:
        steps = {s.step_id: s.memo for s in step_records.list_steps(tx.conn, parent.id)}
    assert "s1" not in steps  # the first invoke started a run and waits for it
    assert len(h.runs("target")) == 1
    error = steps["s2"]["error"]
    assert error["name"] == "InvokeError"
    assert "rate_limited" in error["message"]
    assert "'target'" in error["message"]
