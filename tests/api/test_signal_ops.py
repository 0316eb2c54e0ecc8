"""WaitForSignal as other SDKs send it (Inngest's Go SDK: `opts.signal`, `opts.timeout`,
`opts.conflict`), from a raw loopback app (evil_app.py) in front of Weir in-process: the run
waits, POST /v1/signals resumes it with Inngest's memo `{"data": {"signal", "data"}}`; in
start mode the route wants the admin's credentials, as every /v1 route does."""

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from weir.app import create_app

from tests.api.evil_app import EvilApp, answer, depth, op
from tests.api.evil_weir import ADMIN, SIGNING_KEY, Weir, cloud_settings
from tests.api.helpers import LOCAL

SIGNAL = "order/go-1"


async def go_signal(w: asyncio.StreamWriter, req: dict[str, Any], app: EvilApp) -> None:
    if depth(req) == 0:
        wait = op("WaitForSignal", "sig", "approval", signal=SIGNAL, timeout="1h", conflict="fail")
        await answer(w, 206, [wait], key=app.key)
    else:  # the run's output: the memo as Weir sent it back
        await answer(w, 200, {"memo": req["steps"]["sig"]}, key=app.key)


@pytest.fixture
def weir(database_url: str) -> Iterator[Weir]:
    settings = cloud_settings(database_url)
    with (
        EvilApp(SIGNING_KEY, {"go_signal": go_signal}).running() as evil,
        TestClient(create_app(settings), LOCAL) as client,
    ):
        yield Weir(client, evil)


def waiting(weir: Weir) -> str:
    event_id = weir.start("go_signal")
    for _ in range(400):
        runs = weir.client.get(f"/v1/events/{event_id}/runs", headers=ADMIN).json()["data"]
        if runs:
            run = weir.client.get(f"/v1/runs/{runs[0]['run_id']}", headers=ADMIN).json()["data"]
            if run["state"]["kind"] == "waiting_for_signal":
                return str(run["run_id"])
        time.sleep(0.025)
    raise AssertionError("the run did not wait for its signal")


def test_a_go_sdk_shaped_wait_resumes_with_inngests_memo(weir: Weir) -> None:
    weir.sync("go_signal")
    run_id = waiting(weir)
    body = {"signal": SIGNAL, "data": {"ok": 1}}
    refused = weir.client.post("/v1/signals", json=body)
    assert refused.status_code == 401, refused.text  # start mode: admin credentials only
    resp = weir.client.post("/v1/signals", json=body, headers=ADMIN)
    assert resp.status_code == 200, resp.text
    assert resp.json()["run_id"] == run_id
    delivery = resp.json()["data"]["delivery_id"]
    for _ in range(400):
        done = weir.client.get(f"/v1/runs/{run_id}", headers=ADMIN).json()["data"]
        if done["status"] == "Completed":
            break
        time.sleep(0.025)
    memo = done["output"]["memo"]
    assert memo == {"data": {"signal": SIGNAL, "data": {"ok": 1}, "delivery_id": delivery}}
