"""The certification run: mixed load while Weir is SIGKILLed every few seconds, then audits.

On SQLite one process is killed and restarted; on PostgreSQL two processes share the store and
are killed in turn. The load mixes keyed concurrency with parallel steps, a keyed throttle, a
keyed rate limit, sleeps, waits for events and retried steps. After a drain, the audits
(certification_audit.py) read the app's own fsync'd journal and the store's records and count,
rule by rule: lost runs, stuck work, limit breaches and committed steps that ran again.
`tests/integration/test_certification.py` runs it briefly; `bench/certify.py` for as long as
asked.
"""

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from tests.integration.certification_audit import Figures, Load, audit_run, open_work
from tests.integration.harness import AppServer, Process, WeirServer, wait_until
from tests.support.postgres import fresh_schema

BACKENDS = ("sqlite", "postgres")
LEASE_S = "5"  # a killed process's leases and slots pass on after this (shorter lapses
# under a busy 2-core machine while the process is alive, and only adds re-executions)
TICK_S = 0.5  # one mixed batch of events per tick
THROTTLE_BACKLOG = 8  # throttled events per key sent shortly before each kill


@dataclass
class Cluster:
    servers: list[WeirServer]
    app: AppServer
    database_url: str


@dataclass(frozen=True)
class AppSpec:
    """The app a certification loads: its module, app id and an event that starts a run."""

    module: str
    app_id: str
    probe: str


RULES_APP = AppSpec("tests.integration.apps.weir_certify", "certify", "c/probe")


def certify(tmp: Path, backend: str, seconds: float, kill_every: float, drain_s: float) -> Figures:
    """Load, kill, drain, audit: the whole certification on one backend."""
    with cluster(tmp, backend) as running:
        load = _drive(running, seconds, kill_every)
        drain(running, drain_s)
        return audit_run(running.database_url, running.app, load, backend, seconds)


@contextmanager
def _database(tmp: Path, backend: str) -> Iterator[str | None]:
    if backend == "postgres":
        with fresh_schema() as url:
            yield url
    else:
        yield None  # each WeirServer then uses its own SQLite file in tmp


@contextmanager
def cluster(tmp: Path, backend: str, spec: AppSpec = RULES_APP) -> Iterator[Cluster]:
    """Weir (one process on SQLite, two on PostgreSQL) with the app synced and loaded."""
    with _database(tmp, backend) as url:
        count = 2 if backend == "postgres" else 1
        servers = [
            WeirServer(tmp, "--lease", LEASE_S, database_url=url, name=f"weir{i}")
            for i in range(count)
        ]
        app = AppServer(tmp, spec.module, spec.app_id, servers[0].url)
        try:
            _start(servers, app, spec.probe)
            yield Cluster(servers, app, url or servers[0].database_url)
        finally:
            app.stop()
            for server in servers:
                server.stop()


def _start(servers: list[WeirServer], app: AppServer, probe: str) -> None:
    for server in servers:  # all at once: one migrates, the others wait on its lock
        Process.start(server)
    _wait_healthy(servers)
    app.start()
    app.sync()
    for server in servers:  # each process has loaded the synced functions
        wait_until(lambda s=server: s.runs(s.send(probe)), 30, every=0.3)


def _wait_healthy(servers: list[WeirServer]) -> None:
    for server in servers:
        wait_until(lambda s=server: httpx.get(f"{s.url}/health").status_code == 200, 60)


def _drive(running: Cluster, seconds: float, kill_every: float) -> Load:
    """Send a mixed batch every tick while the killer takes processes down in turn."""

    def batch(tick: int, killer: Killer) -> list[dict[str, Any]]:
        before_kill = abs(killer.next_at - time.monotonic() - 1.0) <= TICK_S / 2
        return _batch(tick, before_kill=before_kill)

    return drive(running, seconds, kill_every, batch)


def drive(
    running: Cluster,
    seconds: float,
    kill_every: float,
    batch: Callable[[int, "Killer"], list[dict[str, Any]]],
) -> Load:
    """Send `batch(tick, killer)` every tick while the killer takes processes down in turn."""
    load = Load()
    killer = Killer(running.servers, kill_every)
    began = time.monotonic()
    tick = 0
    while time.monotonic() - began < seconds:
        send(running, load, batch(tick, killer))
        killer.tick()
        tick += 1
        time.sleep(max(0.0, began + tick * TICK_S - time.monotonic()))
    killer.join()
    load.kills = killer.kills
    return load


class Killer:
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


def send(running: Cluster, load: Load, events: list[dict[str, Any]]) -> None:
    """To a live process (each in turn first); a request cut by a kill is not accepted."""
    servers = running.servers
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


def drain(running: Cluster, timeout: float) -> None:
    """Every process up again, then wait (bounded) until no run or queue item is left."""
    _wait_healthy(running.servers)
    with suppress(AssertionError):  # what is left counts as stuck in the audit
        wait_until(lambda: open_work(running.database_url) == 0, timeout, every=0.5)
