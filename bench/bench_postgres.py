"""Weir on PostgreSQL with one, two and three processes, with no-op handlers.

  runs/s    N events for a function with no steps, spread over the processes' event APIs,
            until every run completed (from the store: first call start to last run end)
  steps/s   the same for a function with ten steps (eleven calls per run)

Each figure is the median of several rounds; each process count is also reported as a ratio
against the one-process figure measured in the same run. The PostgreSQL server is the one
WEIR_TEST_POSTGRES_URL names (`make test` starts it); every process count gets a fresh schema.

    WEIR_TEST_POSTGRES_URL=... .venv/bin/python bench/bench_postgres.py [--rounds 3] [--runs 600]
"""

import argparse
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import create_engine, text

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.integration.harness import AppServer, WeirServer, wait_until  # noqa: E402
from tests.support.postgres import fresh_schema  # noqa: E402

STEPS = 10


def bench(processes: int, rounds: int, n: int) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as tmp, fresh_schema() as url:
        servers = [
            WeirServer(Path(tmp), database_url=url, name=f"weir{i}") for i in range(processes)
        ]
        for server in servers:
            server.start()
        app = AppServer(Path(tmp), "bench.pg_app", "pgbench", servers[0].url)
        app.start()
        try:
            app.sync()
            wait_until(lambda: all(_knows(s) for s in servers), timeout=30, every=0.2)
            runs = [_round(servers, url, "pgbench-noop", "pg/noop", n, r) for r in range(rounds)]
            steps = [
                _round(servers, url, "pgbench-steps", "pg/steps", n // 5, r) * (STEPS + 1)
                for r in range(rounds)
            ]
        finally:
            app.stop()
            for server in servers:
                server.stop()
    return statistics.median(runs), statistics.median(steps)


def _knows(server: WeirServer) -> bool:
    """This process has loaded the synced functions (each refreshes its own catalog)."""
    query = {"query": "{ functions { slug } }"}
    found = httpx.post(f"{server.url}/v0/gql", json=query).json()["data"]["functions"]
    return {"pgbench-noop", "pgbench-steps"} <= {f["slug"] for f in found}


def _round(servers: list[WeirServer], url: str, slug: str, event: str, n: int, r: int) -> float:
    engine = create_engine(url)
    with engine.connect() as conn:
        done_before = conn.execute(
            text(
                "SELECT count(*) FROM runs r JOIN functions f ON f.id = r.function_id "
                "WHERE f.slug = :slug"
            ),
            {"slug": slug},
        ).scalar_one()
    engine.dispose()
    for i in range(0, n, 50):
        target = servers[(i // 50) % len(servers)]
        batch = [{"name": event, "data": {"r": r}}] * min(50, n - i)
        assert httpx.post(f"{target.url}/e/bench", json=batch, timeout=60).status_code == 200
    return _completed_rate(url, slug, done_before, n)


def _completed_rate(url: str, slug: str, before: int, n: int) -> float:
    engine = create_engine(url)
    sql = text(
        "SELECT r.status, r.started_at, r.ended_at FROM runs r JOIN functions f "
        "ON f.id = r.function_id WHERE f.slug = :slug ORDER BY r.id OFFSET :skip"
    )

    def done() -> list[Any] | None:
        with engine.connect() as conn:
            rows = conn.execute(sql, {"slug": slug, "skip": before}).all()
        finished = [row for row in rows if row[0] == "COMPLETED"]
        return finished if len(finished) >= n else None

    rows = wait_until(done, timeout=900, every=0.25)
    engine.dispose()
    span_ms = max(row[2] for row in rows) - min(row[1] for row in rows)
    return len(rows) / (span_ms / 1000)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--runs", type=int, default=600)
    args = parser.parse_args()
    results = {p: bench(p, args.rounds, args.runs) for p in (1, 2, 3)}
    base_runs, base_steps = results[1]
    for processes, (runs, steps) in results.items():
        print(
            f"{processes} process(es): {runs:8.1f} runs/s ({runs / base_runs:.2f}x one)  "
            f"{steps:8.1f} steps/s ({steps / base_steps:.2f}x one)"
        )


if __name__ == "__main__":
    main()
