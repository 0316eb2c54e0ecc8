"""The certification run: mixed load while Weir is SIGKILLed every few seconds, then audits.

On SQLite one process is killed and restarted; on PostgreSQL two processes share the store and
are killed in turn. The load mixes keyed concurrency with parallel steps, a keyed throttle, a
keyed rate limit, sleeps, waits for events and retried steps. After a drain, the audits read
the app's own fsync'd journal (every call and step body, with run, step, attempt and key) and
the store's records, and count, rule by rule: lost runs, stuck work, limit breaches and
committed steps that ran again. `tests/integration/test_certification.py` runs it briefly;
`bench/certify.py` runs it for as long as asked.
"""

import json
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import create_engine, text

from tests.integration import audit
from tests.integration.apps import weir_certify as fns
from tests.integration.harness import AppServer, Process, WeirServer, wait_until
from tests.integration.postgres import fresh_schema

BACKENDS = ("sqlite", "postgres")
LEASE_S = "5"  # a killed process's leases and slots pass on after this (shorter lapses
# under a busy 2-core machine while the process is alive, and only adds re-executions)
TICK_S = 0.5  # one mixed batch of events per tick
# The journal stamps a start when the app receives the call, a varying HTTP delivery after
# Weir's start decision; the throttle replay allows this much of that jitter, no more.
THROTTLE_SLACK_MS = 200.0
THROTTLE_BACKLOG = 8  # throttled events per key sent shortly before each kill
ENDED = ("COMPLETED", "FAILED", "CANCELLED", "SKIPPED")
STARTS_A_RUN = ("c/keyed", "c/throttled", "c/sleeper", "c/waiter", "c/flaky")


@dataclass
class Cluster:
    servers: list[WeirServer]
    app: AppServer
    database_url: str


@dataclass
class Load:
    """What the load generator saw: events Weir accepted (HTTP 200) and kills it made."""

    accepted: list[tuple[str, str]] = field(default_factory=list)  # event id, name
    refused: int = 0  # requests that failed while a process was down or dying
    kills: int = 0


@dataclass
class Figures:
    backend: str
    seconds: float
    kills: int
    accepted: int
    refused: int
    runs: int
    lost: int
    stuck: int
    concurrency_peak: int
    concurrency_breaches: int
    throttle_starts: int
    throttle_excess: int
    throttle_window_peak: int
    throttle_slack_needed_ms: float
    rate_events: int
    rate_admitted: int
    rate_excess: int
    rate_replay_differences: int
    committed_steps: int
    executions: int
    uncommitted_reruns: int
    committed_reruns: int
    retries: int

    def breaches(self) -> list[str]:
        """Every rule this run broke, in words; empty when certified."""
        limit, _, burst = fns.THROTTLE
        rules = {
            "lost runs": self.lost,
            "stuck runs or queue items": self.stuck,
            "concurrency breaches": self.concurrency_breaches,
            "throttle starts over the GCRA": self.throttle_excess,
            "throttle window over limit+burst": max(0, self.throttle_window_peak - limit - burst),
            "rate-limit admissions over the GCRA": self.rate_excess,
            "committed steps run again": self.committed_reruns,
        }
        return [f"{name}: {count}" for name, count in rules.items() if count]

    def table(self) -> str:
        """The figures as a Markdown table, each rule with its verdict."""
        rows = self._run_rows() + self._limit_rows() + self._step_rows()
        head = f"| {self.backend} | figure | verdict |\n|---|---|---|\n"
        return head + "\n".join(f"| {a} | {b} | {c} |" for a, b, c in rows)

    def _run_rows(self) -> list[tuple[str, str, str]]:
        return [
            ("load", f"{self.seconds:.0f} s, {self.kills} SIGKILLs", ""),
            ("events accepted / requests refused", f"{self.accepted} / {self.refused}", ""),
            ("runs", str(self.runs), ""),
            ("lost (accepted, no completed run)", str(self.lost), _ok(self.lost == 0)),
            ("stuck after drain (runs + queue items)", str(self.stuck), _ok(self.stuck == 0)),
        ]

    def _limit_rows(self) -> list[tuple[str, str, str]]:
        limit, period, burst = fns.THROTTLE
        rate, rate_period = fns.RATE_LIMIT
        peak, over = self.concurrency_peak, self.concurrency_breaches
        throttle = f"throttle {limit}/{period}s burst {burst}"
        rated = f"{self.rate_events}, {self.rate_admitted}, {self.rate_excess}"
        return [
            (
                f"concurrency {fns.CONCURRENCY}/key: peak, starts over",
                f"{peak}, {over}",
                _ok(not over),
            ),
            (
                f"{throttle}: starts, over GCRA",
                f"{self.throttle_starts}, {self.throttle_excess}",
                _ok(self.throttle_excess == 0),
            ),
            (
                f"{throttle}: most starts in {period}s (allowed {limit + burst})",
                str(self.throttle_window_peak),
                _ok(self.throttle_window_peak <= limit + burst),
            ),
            (
                "throttle: slack needed for none over / allowed (ms)",
                f"{self.throttle_slack_needed_ms:.0f} / {THROTTLE_SLACK_MS:.0f}",
                "",
            ),
            (
                f"rate limit {rate}/{rate_period}s: events, admitted, over GCRA",
                rated,
                _ok(self.rate_excess == 0),
            ),
            ("rate limit: decisions unlike a replay", str(self.rate_replay_differences), ""),
        ]

    def _step_rows(self) -> list[tuple[str, str, str]]:
        done, ran, retried = self.committed_steps, self.executions, self.retries
        return [
            (
                "memoized results / step executions / retried attempts",
                f"{done} / {ran} / {retried}",
                "",
            ),
            ("steps re-run before their commit (allowed)", str(self.uncommitted_reruns), ""),
            (
                "committed steps run again",
                str(self.committed_reruns),
                _ok(not self.committed_reruns),
            ),
        ]


def _ok(good: bool) -> str:
    return "ok" if good else "**BREACH**"


def certify(tmp: Path, backend: str, seconds: float, kill_every: float, drain_s: float) -> Figures:
    """Load, kill, drain, audit: the whole certification on one backend."""
    with _cluster(tmp, backend) as cluster:
        load = _drive(cluster, seconds, kill_every)
        _drain(cluster, drain_s)
        return _audit(cluster, load, backend, seconds)


@contextmanager
def _database(tmp: Path, backend: str) -> Iterator[str | None]:
    if backend == "postgres":
        with fresh_schema() as url:
            yield url
    else:
        yield None  # each WeirServer then uses its own SQLite file in tmp


@contextmanager
def _cluster(tmp: Path, backend: str) -> Iterator[Cluster]:
    with _database(tmp, backend) as url:
        count = 2 if backend == "postgres" else 1
        servers = [
            WeirServer(tmp, "--lease", LEASE_S, database_url=url, name=f"weir{i}")
            for i in range(count)
        ]
        app = AppServer(tmp, "tests.integration.apps.weir_certify", "certify", servers[0].url)
        try:
            _start(servers, app)
            yield Cluster(servers, app, url or servers[0].database_url)
        finally:
            app.stop()
            for server in servers:
                server.stop()


def _start(servers: list[WeirServer], app: AppServer) -> None:
    for server in servers:  # all at once: one migrates, the others wait on its lock
        Process.start(server)
    _wait_healthy(servers)
    app.start()
    app.sync()
    for server in servers:  # each process has loaded the synced functions
        wait_until(lambda s=server: s.runs(s.send("c/probe")), 30, every=0.3)


def _wait_healthy(servers: list[WeirServer]) -> None:
    for server in servers:
        wait_until(lambda s=server: httpx.get(f"{s.url}/health").status_code == 200, 60)


def _drive(cluster: Cluster, seconds: float, kill_every: float) -> Load:
    """Send a mixed batch every tick while the killer takes processes down in turn."""
    load = Load()
    killer = _Killer(cluster.servers, kill_every)
    began = time.monotonic()
    tick = 0
    while time.monotonic() - began < seconds:
        before_kill = abs(killer.next_at - time.monotonic() - 1.0) <= TICK_S / 2
        _send(cluster, load, _batch(tick, before_kill=before_kill))
        killer.tick()
        tick += 1
        time.sleep(max(0.0, began + tick * TICK_S - time.monotonic()))
    killer.join()
    load.kills = killer.kills
    return load


class _Killer:
    """SIGKILLs one process (each in turn) once it has been up `every` seconds, and starts it
    again in the background, so the load goes on meanwhile (on the other process, if any).
    Counting uptime rather than wall time keeps every cycle a real working period, however
    slowly a busy machine restarts Python."""

    def __init__(self, servers: list[WeirServer], every: float) -> None:
        self.servers, self.every = servers, every
        self.next_at = time.monotonic() + every
        self.kills = 0
        self.restarting: threading.Thread | None = None

    def tick(self) -> None:
        busy = self.restarting is not None and self.restarting.is_alive()
        if busy or time.monotonic() < self.next_at:
            return
        victim = self.servers[self.kills % len(self.servers)]
        victim.kill()
        self.kills += 1
        self.restarting = threading.Thread(target=self._restart, args=(victim,), daemon=True)
        self.restarting.start()

    def _restart(self, server: WeirServer) -> None:
        Process.start(server)
        _wait_healthy([server])
        self.next_at = time.monotonic() + self.every

    def join(self) -> None:
        if self.restarting is not None:
            self.restarting.join()


def _batch(tick: int, *, before_kill: bool) -> list[dict[str, Any]]:
    """One tick of mixed load. A throttle backlog is queued about a second before each kill,
    so every kill lands while throttled starts wait for their slots."""
    events = [{"name": "c/keyed", "data": {"k": "abc"[(tick + i) % 3]}} for i in range(2)]
    events += [{"name": "c/limited", "data": {"k": "ab"[tick % 2]}} for _ in range(5)]
    events += [
        {"name": "c/sleeper", "data": {}},
        {"name": "c/waiter", "data": {"w": tick}},
        {"name": "c/go", "data": {"w": tick - 2}},  # the waiter of two ticks ago, if it waits
    ]
    if tick % 2 == 0:
        events.append({"name": "c/flaky", "data": {}})
    if before_kill or tick == 0:
        events += [{"name": "c/throttled", "data": {"k": k}} for k in "ab"] * THROTTLE_BACKLOG
    return events


def _send(cluster: Cluster, load: Load, events: list[dict[str, Any]]) -> None:
    """To a live process (each in turn first); a request cut by a kill is not accepted."""
    servers = cluster.servers
    first = len(load.accepted) % len(servers)
    for server in servers[first:] + servers[:first]:
        try:
            resp = httpx.post(f"{server.url}/e/certify", json=events, timeout=10)
        except httpx.HTTPError:
            continue
        if resp.status_code == 200:
            ids: list[str] = resp.json()["ids"]
            load.accepted += [(i, str(e["name"])) for i, e in zip(ids, events, strict=True)]
            return
    load.refused += 1


def _drain(cluster: Cluster, timeout: float) -> None:
    """Every process up again, then wait (bounded) until no run or queue item is left."""
    _wait_healthy(cluster.servers)
    with suppress(AssertionError):  # what is left counts as stuck in the audit
        wait_until(lambda: _open_work(cluster.database_url) == 0, timeout, every=0.5)


def _rows(url: str, sql: str) -> list[Any]:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return list(conn.execute(text(sql)))
    finally:
        engine.dispose()


OPEN_RUNS = f"SELECT count(*) FROM runs WHERE status NOT IN {ENDED!r}"


def _open_work(url: str) -> int:
    runs = _rows(url, OPEN_RUNS)[0][0]
    items = _rows(url, "SELECT count(*) FROM queue")[0][0]
    return int(runs) + int(items)


@dataclass
class Store:
    """The store's records the audits need, read once after the drain."""

    run_fn: dict[str, str]  # run id -> function name
    completed: set[str]
    event_runs: dict[str, list[str]]
    rate_limited: set[str]  # events a rate limit skipped
    limited_events: list[Any]  # id, received_at, payload of every c/limited event
    committed: dict[tuple[str, str], int]  # (run, step name) -> ms its result was stored


def _read_store(url: str) -> Store:
    runs = _rows(
        url, "SELECT r.id, f.slug, r.status FROM runs r JOIN functions f ON f.id = r.function_id"
    )
    event_runs: dict[str, list[str]] = defaultdict(list)
    for row in _rows(url, "SELECT event_id, run_id FROM event_runs"):
        event_runs[row.event_id].append(row.run_id)
    skipped = "SELECT event_id FROM event_outcomes WHERE outcome = 'rate_limited'"
    limited = "SELECT id, received_at, payload FROM events WHERE name = 'c/limited'"
    return Store(
        run_fn={r.id: r.slug.rsplit("-", 1)[-1] for r in runs},
        completed={r.id for r in runs if r.status == "COMPLETED"},
        event_runs=event_runs,
        rate_limited={r.event_id for r in _rows(url, skipped)},
        limited_events=sorted(_rows(url, limited), key=lambda r: (r.received_at, r.id)),
        committed={
            (r.run_id, r.name): r.at for r in _rows(url, "SELECT run_id, name, at FROM steps")
        },
    )


def _audit(cluster: Cluster, load: Load, backend: str, seconds: float) -> Figures:
    store = _read_store(cluster.database_url)
    journal = _Journal(cluster.app)
    throttle = _throttle_figures(journal)
    return Figures(
        backend=backend,
        seconds=seconds,
        kills=load.kills,
        accepted=len(load.accepted),
        refused=load.refused,
        runs=len(store.run_fn),
        lost=_lost(store, load),
        stuck=_open_work(cluster.database_url),
        **_concurrency_figures(journal),
        **throttle,
        **_rate_limit_figures(store),
        **_step_figures(store, journal),
    )


class _Journal:
    """The app's journal: every call of a function and every step body's begin, end or fail."""

    def __init__(self, app: AppServer) -> None:
        self.calls = app.entries("call")
        self.begins = app.entries("begin")
        self.finishes = app.entries("end") + app.entries("fail")


def _lost(store: Store, load: Load) -> int:
    """Accepted events that should have started a run and have no completed run."""
    lost = 0
    for event_id, name in load.accepted:
        done = any(r in store.completed for r in store.event_runs.get(event_id, []))
        skipped = name == "c/limited" and event_id in store.rate_limited
        expected = name in STARTS_A_RUN or name == "c/limited"
        lost += expected and not done and not skipped
    return lost


def _concurrency_figures(journal: _Journal) -> dict[str, int]:
    spans = _spans(journal, "keyed")
    return {
        "concurrency_peak": audit.max_overlap(spans),
        "concurrency_breaches": audit.overruns(spans, fns.CONCURRENCY),
    }


def _spans(journal: _Journal, fn: str) -> list[audit.Span]:
    """Each execution of a step body of `fn`, from its begin to its own end (or failure)."""
    ends: dict[tuple[str, str, int], list[float]] = defaultdict(list)
    for e in journal.finishes:
        ends[(e["run"], e["step"], e["attempt"])].append(e["at"])
    spans = []
    for e in journal.begins:
        if e["fn"] != fn:
            continue
        later = [at for at in ends[(e["run"], e["step"], e["attempt"])] if at >= e["at"]]
        end = min(later) if later else e["at"] + fns.STEP_S  # never journaled: cut short
        spans.append((e["key"], e["at"] * 1000, end * 1000))
    return spans


def _throttle_figures(journal: _Journal) -> dict[str, Any]:
    """A run starts at its first call; per key, starts replayed through the throttle's GCRA
    (T = period / limit, τ = burst × T) and counted in every sliding window of one period."""
    limit, period_s, burst = fns.THROTTLE
    period = period_s * 1000
    first: dict[str, tuple[str, float]] = {}
    for e in journal.calls:
        if e["fn"] == "throttled":
            at = min(e["at"] * 1000, first.get(e["run"], ("", float("inf")))[1])
            first[e["run"]] = (e["key"], at)
    starts: dict[str, list[float]] = defaultdict(list)
    for key, at in first.values():
        starts[key].append(at)
    keys = starts.values()
    return {
        "throttle_starts": len(first),
        "throttle_excess": sum(
            audit.gcra_excess(t, period, limit, burst, THROTTLE_SLACK_MS) for t in keys
        ),
        "throttle_window_peak": max(
            (audit.window_peak(t, period - THROTTLE_SLACK_MS) for t in keys), default=0
        ),
        "throttle_slack_needed_ms": max(
            (audit.gcra_overshoot(t, period, limit, burst) for t in keys), default=0.0
        ),
    }


def _rate_limit_figures(store: Store) -> dict[str, int]:
    """Per key, the admitted events (by the store's receipt time, the gate's own clock)
    replayed through the GCRA (τ = (limit − 1) × T); and every event replayed in order."""
    limit, period_s = fns.RATE_LIMIT
    by_key: dict[str, list[tuple[int, bool]]] = defaultdict(list)
    for row in store.limited_events:
        key = str(json.loads(row.payload)["data"]["k"])
        by_key[key].append((row.received_at, row.id in store.event_runs))
    excess = differences = 0
    for events in by_key.values():
        admitted = [at for at, ran in events if ran]
        excess += audit.gcra_excess(admitted, period_s * 1000, limit, limit - 1)
        replay = audit.gcra_replay([at for at, _ in events], period_s * 1000, limit, limit - 1)
        differences += sum(r != ran for r, (_, ran) in zip(replay, events, strict=True))
    return {
        "rate_events": len(store.limited_events),
        "rate_admitted": sum(ran for events in by_key.values() for _, ran in events),
        "rate_excess": excess,
        "rate_replay_differences": differences,
    }


def _step_figures(store: Store, journal: _Journal) -> dict[str, int]:
    """A step body that began after its result was stored ran again after its commit. One
    that ran twice in the same attempt before that was cut by a kill: allowed."""
    committed_reruns = 0
    attempts: dict[tuple[str, str, int], int] = defaultdict(int)
    for e in journal.begins:
        attempts[(e["run"], e["step"], e["attempt"])] += 1
        stored = store.committed.get((e["run"], e["step"]))
        committed_reruns += stored is not None and e["at"] * 1000 > stored
    return {
        "committed_steps": len(store.committed),
        "executions": len(journal.begins),
        "uncommitted_reruns": sum(n - 1 for n in attempts.values()),
        "committed_reruns": committed_reruns,
        "retries": sum(1 for _, _, attempt in attempts if attempt > 0),
    }
