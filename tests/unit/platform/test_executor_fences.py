"""Fencing tokens in the invocation request: `ctx.fences` in the body and `;scope=token` after
the job id, named as the run's keys name the scopes (`lane`, `concurrency0`, ...)."""

import json

from weir.platform.executor.driver import Driver
from weir.platform.executor.request import CallState, build_body, job_id, with_claim_fences
from weir.platform.foundation.vocabulary import RunStatus
from weir.platform.store.records.runs import Run

from tests.support.store_kit import claimed_call

KEYS = {
    "lane": {"key": "acme", "hash": "L" * 64, "fence": 7},
    "concurrency0": {"key": "", "hash": "c0" * 32, "limit": 1},
    "concurrency1": {"key": "x", "hash": "c1" * 32, "limit": 5},
}


def state(keys: dict[str, object], fences: dict[str, int]) -> CallState:
    run = Run("run1", "fn", RunStatus.RUNNING, (), 0, 0, "lane", keys=keys)
    return CallState(run=run, events=[{"name": "e", "data": {}}], memos=[], fences=fences)


def ctx(call: CallState) -> dict[str, object]:
    body = build_body(call, fn_id="f", step_id="step", attempt=0, max_attempts=1)
    parsed: dict[str, object] = json.loads(body)["ctx"]
    return parsed


def test_claim_tokens_are_named_after_the_limit_they_belong_to() -> None:
    call = with_claim_fences(state(KEYS, {"lane": 7}), {"c0" * 32: 3})
    assert call.fences == {"lane": 7, "concurrency0": 3}
    assert ctx(call)["fences"] == {"lane": 7, "concurrency0": 3}
    assert job_id(42, 0, call.fences) == "42;concurrency0=3;lane=7"
    assert job_id(42, 2, call.fences) == "42.2;concurrency0=3;lane=7"  # the row's third call


def test_a_run_without_tokens_sends_no_fences_and_a_plain_job_id() -> None:
    call = with_claim_fences(state({}, {}), {})
    assert "fences" not in ctx(call)
    assert job_id(42, 0, call.fences) == "42"


def test_the_request_names_the_row_s_call_in_its_job_id() -> None:
    driver = Driver(None, None, None, lambda: None)  # type: ignore[arg-type]
    item = claimed_call("run", "token", item_id=7, series=2)
    headers = driver._headers(item, b"{}", {"lane": 4})  # type: ignore[misc]
    assert headers["x-inngest-job-id"] == "7.2;lane=4"  # the row's third call
