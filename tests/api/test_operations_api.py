"""Operating endpoints in process: /metrics in Prometheus text format, liveness, readiness."""

from pathlib import Path

from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families
from weir.app import create_app
from weir.platform.settings import Settings

from tests.api.helpers import LOCAL, function, sync_body


def scrape(client: TestClient) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    resp = client.get("/metrics")
    assert resp.status_code == 200
    assert resp.headers["content-type"].startswith("text/plain; version=0.0.4")
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(resp.text)
        for sample in family.samples
    }


def test_metrics_count_accepted_events_and_read_gauges_from_the_store(
    client: TestClient,
) -> None:
    rate_limited = function("limited", event="t/limited", rateLimit={"limit": 1, "period": "1h"})
    assert client.post("/fn/register", json=sync_body(rate_limited)).status_code == 200
    for _ in range(3):
        assert client.post("/e/key", json={"name": "t/limited"}).status_code == 200
    assert client.post("/e/key", json={"name": "t/nothing"}).status_code == 200
    found = scrape(client)
    assert found[("weir_events_accepted_total", (("source", "sent"),))] == 4
    # the first event started a run; the rate limit skipped the other two
    assert found[("weir_event_outcomes", (("outcome", "rate_limited"),))] == 2
    for state in ("due", "scheduled", "leased"):
        assert ("weir_queue_items", (("state", state),)) in found
    assert ("weir_queue_oldest_due_seconds", ()) in found
    assert ("weir_inflight_items", ()) in found


def test_liveness_and_readiness_answer_once_started(client: TestClient) -> None:
    assert client.get("/health/live").json() == {"status": "ok", "service": "weir"}
    assert client.get("/health/ready").json() == {"status": "ok"}
    assert client.get("/health").json() == {"status": "ok"}


def test_readiness_fails_naming_why_when_the_scheduler_has_stopped(client: TestClient) -> None:
    weir = client.app.state.platform  # type: ignore[attr-defined]

    async def stop_the_scheduler() -> None:  # as if it had died: the process still serves
        weir._stop.set()
        weir.scheduler.wake()
        await weir._task

    client.portal.call(stop_the_scheduler)  # type: ignore[union-attr]
    resp = client.get("/health/ready")
    assert resp.status_code == 503
    assert resp.json() == {"status": "unready", "problems": ["the scheduler is not running"]}
    assert client.get("/health/live").status_code == 200


def test_a_platform_with_retention_starts_and_stops_cleanly(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/weir.db"
    settings = Settings(database_url=url, sqlite_synchronous="OFF", retention_ms=3600_000)
    with TestClient(create_app(settings), LOCAL) as client:
        weir = client.app.state.platform  # type: ignore[attr-defined]
        assert weir._retention is not None and not weir._retention.done()
        assert client.get("/health/ready").status_code == 200
    assert weir._retention.done() and weir._retention.exception() is None
