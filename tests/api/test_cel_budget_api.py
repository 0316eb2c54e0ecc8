"""A hostile 3 MiB event against an accepted but costly trigger `if`: the process stays
responsive (/health/live answers while the event is admitted), and the event is refused for
that function with the reason recorded, by the worker that parsed the body."""

import threading
from typing import Any

from fastapi.testclient import TestClient
from weir.expressions import current_budget
from weir.expressions._pool import POOL

from tests.api.helpers import function, store_rows, sync_body

FILTER = "event.data.items.filter(i, i > 0).size() > 0"  # passes every shape limit


def _outcomes(client: TestClient) -> list[tuple[str, str]]:
    return [
        (str(o), str(d))
        for o, d in store_rows(client, "SELECT outcome, detail FROM event_outcomes")
    ]


def test_health_answers_while_a_hostile_event_is_admitted(client: TestClient) -> None:
    fn = function("costly", event="t/big", triggers=[{"event": "t/big", "expression": FILTER}])
    assert client.post("/fn/register", json=sync_body(fn)).status_code == 200
    assert POOL.wait_until_ready(current_budget())
    stopped = POOL.stopped
    answer: dict[str, Any] = {}
    sender = threading.Thread(
        target=lambda: answer.update(
            resp=client.post("/e/key", json={"name": "t/big", "data": {"items": [1] * 1_500_000}})
        )
    )
    sender.start()
    during = 0
    while sender.is_alive():
        assert client.get("/health/live").status_code == 200
        during += sender.is_alive()  # answered while the event was still being admitted
    sender.join()
    assert answer["resp"].status_code == 200
    assert during > 0
    ((outcome, detail),) = _outcomes(client)
    assert outcome == "expression_over_budget"
    assert f"cost budget of {current_budget().time_ms} ms" in detail
    # Evaluated where the body was parsed, before the transaction: no CEL worker was stopped
    # (the writer never waited on one).
    assert POOL.stopped == stopped
