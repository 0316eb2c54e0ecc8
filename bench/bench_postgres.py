"""Weir on PostgreSQL with one, two and three processes, with no-op handlers; and whether every
limit stays exact when several processes share the database.

  runs/s    N events for a function with no steps, spread over the processes' event APIs,
            until every run completed (from the store: first call start to last run end)
  steps/s   the same for a function with ten steps: its runs/s times ten (eleven calls per
            run, as bench_platform.py counts steps; before 2026-12-03 this script counted calls)
  limits    after the rounds, with three processes: keyed concurrency, a keyed throttle
            and a keyed rate limit under load sent to every process in turn, then audited
            from the app's own journal and the store (tests/integration/audit.py):
            concurrency: the most step bodies of one key running at once (the app's journal
              of begins and ends), and how many began with the limit already running;
            throttle: each run's start (the claim of its first call, where the throttle
              decides) replayed per key through the GCRA with no slack; the most starts in
              any one period;
            rate limit: the admitted events (by the store's receipt time) replayed per key
              through the GCRA, and every event's decision against a replay of all of them.

Each figure is the median of several rounds. The process counts share one schema and take
turns within each round (processes started and stopped between them, the order reversed every
other round), so load drifting on a shared machine reaches every count alike; each count's
ratio is the median over rounds of its figure against the same round's one-process figure.
The PostgreSQL server is the one WEIR_TEST_POSTGRES_URL names (`bash .ci/postgres`).
On one machine the cores carry PostgreSQL, the app and every Weir process at once: say how
many cores the figures had.

    WEIR_TEST_POSTGRES_URL=... .venv/bin/python bench/bench_postgres.py [--rounds 3] [--runs 600]
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import create_engine, text

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import pg_app as fns  # noqa: E402
from tests.integration import audit  # noqa: E402
from tests.integration.harness import AppServer, WeirServer, store_rows, wait_until  # noqa: E402
from tests.support.postgres import fresh_schema  # noqa: E402

STEPS = 10
FUNCTIONS = {f"pgbench-{name}" for name in ("noop", "steps", "keyed", "throttled", "limited")}
KEYED = {"k1": 30, "k2": 30, "k3": 30}  # runs per key; two step bodies each
THROTTLED = {"t1": 40, "t2": 40}  # runs per key, all sent at once
LIMITED_TICKS, LIMITED_PER_TICK, LIMITED_TICK_S = 15, 4, 0.2  # per key, keys l1 and l2


@dataclass
class Limits:
    concurrency_peak: int
    concurrency_over: int  # step bodies begun with the key's limit already running
    throttle_starts: int
    throttle_excess: int  # starts the rule's GCRA replay would not have allowed
    throttle_window_peak: int  # most starts of one key in any one period
    limited_events: int
    limited_admitted: int
    limited_excess: int  # admitted events a GCRA replay would not have admitted
    limited_unlike_replay: int  # decisions that differ from a replay of every event

    def exact(self) -> bool:
        limit, _, burst = fns.THROTTLE
        return (
            self.concurrency_peak <= fns.CONCURRENCY
            and self.concurrency_over == 0
            and self.throttle_excess == 0
            and self.throttle_window_peak <= limit + burst
            and self.limited_excess == 0
            and self.limited_unlike_replay == 0
        )


COUNTS = (1, 2, 3)
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
POSTMASTER = ROOT / ".weir-ci" / "pg" / "postmaster.pid"  # the cluster `.ci/postgres` runs


def cpu_seconds(pid: int) -> float:
    """CPU time of a process, its children that have ended (waited for) and, recursively,
    those still running, from /proc: 0 if it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        children = [
            int(c)
            for task in Path(f"/proc/{pid}").glob("task/*")
            for c in (task / "children").read_text().split()
        ]
    except OSError:
        return 0.0
    own = sum(int(f) for f in fields[11:15]) / CLOCK_TICKS  # utime stime cutime cstime
    return own + sum(cpu_seconds(c) for c in children)


def postgres_pid() -> int | None:
    """The PostgreSQL server's pid when it is the cluster `.ci/postgres` runs (its backends
    are its children), else None: its CPU is then not reported."""
    try:
        lines = POSTMASTER.read_text().splitlines()
    except OSError:
        return None
    port = lines[3] if len(lines) > 3 else ""
    return int(lines[0]) if f":{port}/" in os.environ.get("WEIR_TEST_POSTGRES_URL", "") else None


@dataclass
class Figures:
    runs: dict[int, list[float]]  # processes -> runs/s of each round
    steps: dict[int, list[float]]  # processes -> steps/s of each round
    limits: Limits  # audited with the most processes running
    # processes -> per round, CPU ms per step of the 10-step function: {"weir": all Weir
    # processes, "postgres": the server and its backends}
    cpu: dict[int, list[dict[str, float]]]


def bench(rounds: int, n: int) -> Figures:
    """One schema, one app, up to three Weir processes; every round measures each process
    count in turn (started or stopped as needed; the order reversed every other round), so
    the machine's load drifts over all counts alike."""
    runs: dict[int, list[float]] = {p: [] for p in COUNTS}
    steps: dict[int, list[float]] = {p: [] for p in COUNTS}
    cpu: dict[int, list[dict[str, float]]] = {p: [] for p in COUNTS}
    pg = postgres_pid()
    with tempfile.TemporaryDirectory() as tmp, fresh_schema() as url:
        servers = [
            WeirServer(Path(tmp), database_url=url, name=f"weir{i}") for i in range(max(COUNTS))
        ]
        servers[0].start()
        running = 1
        app = AppServer(Path(tmp), "bench.pg_app", "pgbench", servers[0].url)
        app.start()

        def use(count: int) -> list[WeirServer]:
            nonlocal running
            for server in servers[running:count]:
                server.start()
            for server in servers[count:running]:
                server.stop()
            running = count
            wait_until(lambda: all(_knows(s) for s in servers[:count]), timeout=60, every=0.2)
            return servers[:count]

        try:
            app.sync()
            for r in range(rounds):
                for count in COUNTS if r % 2 == 0 else COUNTS[::-1]:
                    live = use(count)
                    runs[count].append(_round(live, url, "pgbench-noop", "pg/noop", n, r))
                    before = _usage(live, pg)
                    rate = _round(live, url, "pgbench-steps", "pg/steps", n // 5, r)
                    used = _usage(live, pg)
                    steps[count].append(rate * STEPS)
                    cpu[count].append(
                        {k: (used[k] - before[k]) * 1000 / (n // 5 * STEPS) for k in used}
                    )
                    print(
                        f"  round {r + 1}, {count} process(es): {runs[count][-1]:7.1f} runs/s "
                        f"{steps[count][-1]:7.1f} steps/s (load {os.getloadavg()[0]:.2f})",
                        flush=True,
                    )
            limits = _limits(use(max(COUNTS)), url, app)
        finally:
            app.stop()
            for server in servers[:running]:
                server.stop()
    return Figures(runs, steps, limits, cpu)


def _usage(live: list[WeirServer], pg: int | None) -> dict[str, float]:
    weir = sum(cpu_seconds(s.proc.pid) for s in live if s.proc is not None)
    return {"weir": weir, "postgres": cpu_seconds(pg) if pg is not None else float("nan")}


def _knows(server: WeirServer) -> bool:
    """This process has loaded the synced functions (each refreshes its own catalog)."""
    query = {"query": "{ functions { slug } }"}
    found = httpx.post(f"{server.url}/v0/gql", json=query).json()["data"]["functions"]
    return {f["slug"] for f in found} >= FUNCTIONS


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


# -- limits ------------------------------------------------------------------------------------


def _limits(servers: list[WeirServer], url: str, app: AppServer) -> Limits:
    """Limited load sent to every process in turn, drained, then audited."""
    sent = 0

    def post(events: list[dict[str, Any]]) -> None:
        nonlocal sent
        target = servers[sent % len(servers)]
        sent += 1
        assert httpx.post(f"{target.url}/e/bench", json=events, timeout=60).status_code == 200

    for key, count in KEYED.items():
        for i in range(0, count, 10):
            post([{"name": "pg/keyed", "data": {"k": key}}] * min(10, count - i))
    for key, count in THROTTLED.items():
        for i in range(0, count, 10):
            post([{"name": "pg/throttled", "data": {"k": key}}] * min(10, count - i))
    for _ in range(LIMITED_TICKS):
        post([{"name": "pg/limited", "data": {"k": k}} for k in ("l1", "l2")] * LIMITED_PER_TICK)
        time.sleep(LIMITED_TICK_S)
    wait_until(lambda: _drained(url), timeout=600, every=0.5)
    return _audit(url, app)


def _drained(url: str) -> bool:
    rows = store_rows(
        url,
        "SELECT count(*) FROM runs r JOIN functions f ON f.id = r.function_id "
        "WHERE f.slug IN ('pgbench-keyed', 'pgbench-throttled', 'pgbench-limited') "
        "AND r.status NOT IN ('COMPLETED', 'FAILED', 'CANCELLED')",
    )
    keyed_and_throttled = store_rows(
        url,
        "SELECT count(*) FROM runs r JOIN functions f ON f.id = r.function_id "
        "WHERE f.slug IN ('pgbench-keyed', 'pgbench-throttled')",
    )
    return int(rows[0][0]) == 0 and int(keyed_and_throttled[0][0]) == sum(KEYED.values()) + sum(
        THROTTLED.values()
    )


def _audit(url: str, app: AppServer) -> Limits:
    # concurrency: step bodies from the app's journal, begin to end
    ends = {(e["run"], e["step"], e["attempt"]): e["at"] for e in app.entries("end")}
    spans = [
        (e["key"], e["at"] * 1000, ends.get((e["run"], e["step"], e["attempt"]), e["at"]) * 1000)
        for e in app.entries("begin")
    ]
    # throttle: each run's start as the store recorded it, by the key the app was called with
    key_of = {e["run"]: e["key"] for e in app.entries("call")}
    starts: dict[str, list[float]] = defaultdict(list)
    for row in store_rows(
        url,
        "SELECT r.id, r.started_at FROM runs r JOIN functions f ON f.id = r.function_id "
        "WHERE f.slug = 'pgbench-throttled'",
    ):
        starts[key_of[row.id]].append(float(row.started_at))
    limit, period_s, burst = fns.THROTTLE
    period = period_s * 1000
    # rate limit: every event in receipt order, and whether it was admitted
    skipped = {
        r.event_id
        for r in store_rows(
            url, "SELECT event_id FROM event_outcomes WHERE outcome = 'rate_limited'"
        )
    }
    by_key: dict[str, list[tuple[float, bool]]] = defaultdict(list)
    for row in store_rows(
        url,
        "SELECT id, received_at, payload FROM events WHERE name = 'pg/limited' "
        "ORDER BY received_at, id",
    ):
        key = str(_json(row.payload)["data"]["k"])
        by_key[key].append((float(row.received_at), row.id not in skipped))
    r_limit, r_period_s = fns.RATE_LIMIT
    r_period = r_period_s * 1000
    excess = unlike = 0
    for decisions in by_key.values():
        admitted = [t for t, ok in decisions if ok]
        excess += audit.gcra_excess(admitted, r_period, r_limit, r_limit - 1)
        replay = audit.gcra_replay([t for t, _ in decisions], r_period, r_limit, r_limit - 1)
        unlike += sum(a != b for a, b in zip(replay, (ok for _, ok in decisions), strict=True))
    return Limits(
        concurrency_peak=audit.max_overlap(spans),
        concurrency_over=audit.overruns(spans, fns.CONCURRENCY),
        throttle_starts=sum(len(t) for t in starts.values()),
        throttle_excess=sum(
            audit.throttle_excess(t, period, limit, burst) for t in starts.values()
        ),
        throttle_window_peak=max(
            (audit.window_peak(t, period) for t in starts.values()), default=0
        ),
        limited_events=sum(len(d) for d in by_key.values()),
        limited_admitted=sum(ok for d in by_key.values() for _, ok in d),
        limited_excess=excess,
        limited_unlike_replay=unlike,
    )


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str | bytes) else value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--runs", type=int, default=600)
    args = parser.parse_args()
    print(f"load {os.getloadavg()}, {os.cpu_count()} cores for PostgreSQL, the app and Weir")
    got = bench(args.rounds, args.runs)
    med = statistics.median
    for count in COUNTS:
        runs, steps = got.runs[count], got.steps[count]
        # ratios per round (the same round's one-process figure), then their median
        run_x = med([a / b for a, b in zip(runs, got.runs[1], strict=True)])
        step_x = med([a / b for a, b in zip(steps, got.steps[1], strict=True)])
        weir_ms = med([c["weir"] for c in got.cpu[count]])
        pg_ms = med([c["postgres"] for c in got.cpu[count]])
        print(
            f"{count} process(es): {med(runs):8.1f} runs/s ({run_x:.2f}x one)  "
            f"{med(steps):8.1f} steps/s ({step_x:.2f}x one)  CPU ms per step: Weir "
            f"{weir_ms:.2f}, PostgreSQL {pg_ms:.2f}"
        )
    lim = got.limits
    limit, period_s, burst = fns.THROTTLE
    print(
        f"\nlimits with {max(COUNTS)} processes (concurrency {fns.CONCURRENCY}/key; throttle "
        f"{limit}/{period_s}s burst {burst}/key; rate limit "
        f"{fns.RATE_LIMIT[0]}/{fns.RATE_LIMIT[1]}s/key):\n"
        f"  concurrency: peak {lim.concurrency_peak}, step bodies begun over the limit "
        f"{lim.concurrency_over}\n"
        f"  throttle: starts {lim.throttle_starts}, over GCRA {lim.throttle_excess}, most in "
        f"{period_s}s {lim.throttle_window_peak} (allowed {limit + burst})\n"
        f"  rate limit: events {lim.limited_events}, admitted {lim.limited_admitted}, over "
        f"GCRA {lim.limited_excess}, decisions unlike a replay {lim.limited_unlike_replay}\n"
        f"  {'exact' if lim.exact() else 'NOT EXACT'}"
    )
    print(f"load {os.getloadavg()}")
    if not lim.exact():
        raise SystemExit(1)


if __name__ == "__main__":
    main()
