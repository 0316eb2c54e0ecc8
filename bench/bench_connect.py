"""Calls over Connect against calls over HTTP: the same official-SDK functions, one app served
over HTTP (uvicorn) and one connected out to Weir (`inngest.connect`), measured in alternating
rounds of the same run (each app has its own trigger event).

  runs/s   N events of a function with two steps (three calls per run) until every run
           completed (from the store: first call start to last run end)

Each figure is the median of the rounds; Connect is also given as a ratio of HTTP.

    .venv/bin/python bench/bench_connect.py [--rounds 3] [--runs 200]
"""

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import create_engine, text

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.integration.harness import AppServer, Process, WeirServer, wait_until  # noqa: E402

MODULE = "tests.integration.apps.inngest_connect"
SLUGS = {"http": "httpbench-steps", "connect": "connbench-steps"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        weir = WeirServer(tmp)
        weir.start()
        http_app = AppServer(tmp, MODULE, "httpbench", weir.url)
        http_app.env["EVENT_PREFIX"] = "h"
        env = os.environ | {"APP_ID": "connbench", "INNGEST_DEV": weir.url}
        worker = Process([sys.executable, "-m", MODULE], env, tmp / "connbench.log")
        try:
            http_app.start()
            http_app.sync()
            worker.start()
            wait_until(lambda: _known(weir), timeout=60)
            rates: dict[str, list[float]] = {"http": [], "connect": []}
            for r in range(args.rounds):
                for kind in ("http", "connect"):
                    rates[kind].append(_round(weir, kind, args.runs, r))
        finally:
            worker.stop()
            http_app.stop()
            weir.stop()
    http, conn = (statistics.median(rates[k]) for k in ("http", "connect"))
    print(f"HTTP     {http:8.1f} runs/s  (rounds: {', '.join(f'{x:.1f}' for x in rates['http'])})")
    print(
        f"Connect  {conn:8.1f} runs/s  (rounds: {', '.join(f'{x:.1f}' for x in rates['connect'])})"
        f"  = {conn / http:.2f}x HTTP"
    )


def _known(weir: WeirServer) -> bool:
    query = {"query": "{ functions { slug } }"}
    found = httpx.post(f"{weir.url}/v0/gql", json=query).json()["data"]["functions"]
    return set(SLUGS.values()) <= {f["slug"] for f in found}


def _round(weir: WeirServer, kind: str, n: int, r: int) -> float:
    before = _count(weir, SLUGS[kind])
    event = "h/steps" if kind == "http" else "c/steps"
    for i in range(0, n, 50):
        batch = [{"name": event, "data": {"x": r}}] * min(50, n - i)
        assert httpx.post(f"{weir.url}/e/bench", json=batch, timeout=60).status_code == 200
    return _rate(weir, SLUGS[kind], before, n)


def _count(weir: WeirServer, slug: str) -> int:
    rows = _rows(weir, slug, 0)
    return len(rows)


def _rows(weir: WeirServer, slug: str, skip: int) -> list[Any]:
    engine = create_engine(weir.database_url)
    sql = text(
        "SELECT r.status, r.started_at, r.ended_at FROM runs r JOIN functions f "
        "ON f.id = r.function_id WHERE f.slug = :slug ORDER BY r.id LIMIT -1 OFFSET :skip"
    )
    try:
        with engine.connect() as conn:
            return list(conn.execute(sql, {"slug": slug, "skip": skip}).all())
    finally:
        engine.dispose()


def _rate(weir: WeirServer, slug: str, before: int, n: int) -> float:
    def done() -> list[Any] | None:
        finished = [row for row in _rows(weir, slug, before) if row[0] == "COMPLETED"]
        return finished if len(finished) >= n else None

    rows = wait_until(done, timeout=900, every=0.25)
    span_ms = max(row[2] for row in rows) - min(row[1] for row in rows)
    return len(rows) / (span_ms / 1000)


if __name__ == "__main__":
    main()
