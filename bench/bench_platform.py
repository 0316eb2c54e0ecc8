"""End-to-end throughput and latency of Weir on SQLite, with no-op handlers.

Three processes on loopback: this script (sends events, reads results), Weir itself
(`python -m weir dev` on a fresh SQLite file) and an app built with `weir.sdk`, served by
uvicorn. Figures, each the median of several rounds:

  runs/s      a function with no steps: N events sent in batches, until every run completed
  steps/s     a 10-step function (11 calls per run: one per step, then the return)
  checkpointed the same function declared with checkpoint=True (weir.sdk runs its steps on
              in one call: one call per run, every step saved in one commit)
  latency     event sent -> first call of its run reaches the app (p50, p99), events sent
              one at a time with small pauses

Baselines measured in the same process, on the same machine: the raw HTTP round-trip rate of
the app's server with aiohttp (a plain route, 32 in flight, and one at a time), and a plain
sqlite3 INSERT+COMMIT rate (WAL, synchronous=FULL as `weir dev` uses).

Besides wall-clock figures, each round counts what contention on a shared machine does not
distort: SQL statements Weir executed (every statement SQLite ran, BEGIN/COMMIT/SAVEPOINT
included) and Weir's CPU milliseconds, per run and per step. The statements are counted by a
trace callback in Weir's process, which costs it about 0.7 µs a statement while it counts (and
half that while it waits): so it counts only in a smaller census round after each timed one.
`--baseline-ref REF` runs a second Weir built from that git commit beside the current one,
rounds interleaved, and prints every figure for both with their ratio: the comparison that
stays fair while other work shares the cores.

    .venv/bin/python bench/bench_platform.py [--rounds 3] [--events 2000] [--profile]
    .venv/bin/python bench/bench_platform.py --baseline-ref main

--profile adds one profiled round of each workload (cProfile in every thread of Weir and of
the app) and prints the top costs; it is slower and its figures are not the benchmark's.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import http.server
import json
import os
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import aiohttp

if TYPE_CHECKING:
    from fastapi import FastAPI

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
APP_ID = "bench"
STEPS = 10
TARGETS = {"runs/s": 2000.0, "steps/s": 5000.0, "p50 ms": 5.0}  # issue 12
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


# -- the app (imported by uvicorn in its own process: --factory bench_platform:make_app) ------

FIRST_CALLS: dict[str, float] = {}  # run id -> seconds from the event's send to its first call


def make_app() -> FastAPI:
    from fastapi import FastAPI
    from weir.sdk import Context, Weir, serve

    weir = Weir(APP_ID, dev=True)

    @weir.function("noop", event="bench/noop", retries=0)
    async def noop(ctx: Context) -> None:
        return None

    async def steps(ctx: Context) -> int:
        for i in range(STEPS):
            await ctx.step.run(f"step-{i}", _nothing)
        return STEPS

    weir.function("steps", event="bench/steps", retries=0)(steps)
    # A baseline Weir may predate checkpointed answers: its app runs the function per call.
    checkpoint = os.environ.get("BENCH_CHECKPOINT", "1") == "1"
    weir.function("checkpointed", event="bench/checkpointed", retries=0, checkpoint=checkpoint)(
        steps
    )

    @weir.function("latency", event="bench/latency", retries=0)
    async def latency(ctx: Context) -> None:
        FIRST_CALLS.setdefault(ctx.run_id, time.time() - float(ctx.event.data["sent"]))

    app = FastAPI()
    serve(app, weir)

    @app.post("/bench/echo")
    async def echo() -> dict[str, bool]:
        return {"ok": True}

    @app.get("/bench/first-calls")
    async def first_calls() -> list[float]:
        values = list(FIRST_CALLS.values())
        FIRST_CALLS.clear()
        return values

    return app


def _nothing() -> None:
    return None


def client_session(timeout: aiohttp.ClientTimeout) -> aiohttp.ClientSession:
    # uvicorn closes a connection idle for 5 s; an aiohttp pool keeps connections 15 s by
    # default and may send on one at the instant the server closes it (ECONNRESET). Keep ours
    # for less than the server's idle timeout.
    return aiohttp.ClientSession(
        timeout=timeout, connector=aiohttp.TCPConnector(keepalive_timeout=2)
    )


# -- processes -------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Process:
    """A child process whose CPU time we can read (Linux /proc)."""

    def __init__(self, name: str, args: list[str], env: dict[str, str], log: Path) -> None:
        self.name, self.log = name, log
        with log.open("ab") as out:
            self.proc = subprocess.Popen(args, env=env, cwd=ROOT, stdout=out, stderr=out)

    def cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime + stime

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 60) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


def python_args(
    module_args: list[str], mode: str, out: Path | None, python: str = sys.executable
) -> list[str]:
    """`python -m <module_args>`, or the same through `_wrapped` (see `run_wrapped`)."""
    if out is None:
        return [python, "-m", *module_args]
    wrapper = [python, str(Path(__file__).resolve()), "_wrapped", mode, str(out), "--"]
    return [*wrapper, *module_args]


@dataclass
class Stack:
    """The app and Weir, running; the Weir database file is read directly for results."""

    app: Process
    weir: Process
    app_url: str
    weir_url: str
    db_path: Path
    weir_threads: Path  # JSON written by Weir at exit: CPU seconds per thread group
    weir_stats: Path  # JSON written by Weir on SIGUSR1: SQL statements counted so far
    functions: dict[str, str] = field(default_factory=dict)  # short id -> function id
    _seq: int = 0

    def stop(self) -> None:
        self.weir.stop(signal.SIGINT)
        self.app.stop(signal.SIGINT)

    async def statements(self) -> dict[str, int]:
        """SQL statements Weir has executed so far: {"all": n, "data": n without BEGIN,
        COMMIT, ROLLBACK, SAVEPOINT and RELEASE}."""
        self._seq += 1
        self.weir.proc.send_signal(signal.SIGUSR1)
        for _ in range(1000):
            with contextlib.suppress(OSError, ValueError):
                stats = json.loads(self.weir_stats.read_text())
                if stats["seq"] >= self._seq:
                    return {"all": int(stats["all"]), "data": int(stats["data"])}
            await asyncio.sleep(0.01)
        raise SystemExit(f"Weir did not report its statement count; see {self.weir.log}")

    async def count(self, on: bool) -> dict[str, int]:
        """Start or stop counting Weir's statements: the state is written beside the counts,
        and Weir takes it up when it next reports them (SIGUSR1); returns that report."""
        _write(Path(f"{self.weir_stats}.count"), "on" if on else "off")
        return await self.statements()


def _write(path: Path, text: str) -> None:
    """Outside the coroutine, for the async lint: a few bytes, no thread needed."""
    path.write_text(text)


async def start_stack(
    session: aiohttp.ClientSession,
    tmp: Path,
    profiled: bool = False,
    weir_path: Path | None = None,
    name: str = "current",
    otel_endpoint: str | None = None,
) -> Stack:
    """Start the app, then Weir (which syncs it). Weir's CPU is accounted per thread and its
    SQL statements counted; with `profiled`, both processes also run under cProfile in every
    thread. `weir_path`: a directory put first on Weir's PYTHONPATH (a baseline build)."""
    app_port, weir_port = free_port(), free_port()
    weir_url = f"http://127.0.0.1:{weir_port}"
    env = os.environ | {"WEIR_BASE_URL": weir_url, "WEIR_DEV": "1", "PYTHONUNBUFFERED": "1"}
    tmp = tmp / name
    tmp.mkdir(exist_ok=True)
    app_args = ["uvicorn", "--app-dir", str(HERE), "--factory", "bench_platform:make_app"]
    app_args += ["--port", str(app_port), "--log-level", "warning", "--no-access-log"]
    # uvicorn closes idle connections after 5 s, aiohttp keeps them 15 s: a call sent on a
    # connection the app has just closed fails (ServerDisconnectedError) and, with retries=0,
    # fails its run. Reported as a platform issue; a longer keep-alive keeps the bench clean.
    app_args += ["--timeout-keep-alive", "120"]
    out = tmp / ("profile" if profiled else "cpu")
    app_cmd = python_args(app_args, "profile", out.with_suffix(".app") if profiled else None)
    app_env = env if _reads_checkpoints(weir_path) else env | {"BENCH_CHECKPOINT": "0"}
    app = Process("app", app_cmd, app_env, tmp / "app.log")
    app_url = f"http://127.0.0.1:{app_port}"
    await wait_http(session, f"{app_url}/api/inngest", app)
    db_path = tmp / f"weir-{weir_port}.db"
    weir_args = ["weir", "dev", "--port", str(weir_port), "--database-url", f"sqlite:///{db_path}"]
    weir_args += ["-u", f"{app_url}/api/inngest"]
    if otel_endpoint is not None:  # export every finished run's trace to the local sink
        weir_args += ["--otel"]
    python = sys.executable if weir_path is None else baseline_python(weir_path)
    mode = "profile" if profiled else "cpu"
    weir_cmd = python_args(weir_args, mode, out.with_suffix(".weir"), python)
    weir_env = env if weir_path is None else env | {"PYTHONPATH": str(weir_path)}
    if otel_endpoint is not None:
        weir_env = weir_env | {"OTEL_EXPORTER_OTLP_ENDPOINT": otel_endpoint}
    weir = Process("weir", weir_cmd, weir_env, tmp / "weir.log")
    stats = out.with_suffix(".weir.stats.json")
    stack = Stack(app, weir, app_url, weir_url, db_path, out.with_suffix(".weir.cpu.json"), stats)
    await wait_http(session, f"{weir_url}/health", weir)
    stack.functions = await wait_for_functions(db_path)
    return stack


def _reads_checkpoints(weir_path: Path | None) -> bool:
    """Whether the Weir build reads checkpointed answers (the current one does)."""
    if weir_path is None:
        return True
    platform = (weir_path / "weir").resolve() / ".."
    for place in ("foundation/vocabulary.py", "vocabulary.py"):  # the rooms moved it
        vocabulary = (platform / place).resolve()
        if vocabulary.exists():
            return "RunComplete" in vocabulary.read_text()
    return False


async def wait_http(session: aiohttp.ClientSession, url: str, proc: Process) -> None:
    for _ in range(600):
        if proc.proc.poll() is not None:
            raise SystemExit(f"{proc.name} exited early; see {proc.log}")
        with contextlib.suppress(aiohttp.ClientError, OSError):
            async with session.get(url) as resp:
                if resp.status == 200:
                    return
        await asyncio.sleep(0.05)
    raise SystemExit(f"{url} did not answer 200 within 30 s; see {proc.log}")


async def wait_for_functions(db_path: Path) -> dict[str, str]:
    for _ in range(600):
        with contextlib.suppress(sqlite3.Error):
            rows = query(db_path, "SELECT slug, id FROM functions")
            found = {str(slug).rsplit("-", 1)[-1]: str(fid) for slug, fid in rows}
            if {"noop", "steps", "checkpointed", "latency"} <= set(found):
                return found
        await asyncio.sleep(0.05)
    raise SystemExit("the app's functions were not synced within 30 s")


def query(db_path: Path, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=10)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


# -- workloads -------------------------------------------------------------------------------


@dataclass
class Round:
    seconds: float
    runs: int
    cpu: dict[str, float]  # process -> CPU seconds used during the round
    statements: dict[str, int] = field(default_factory=dict)  # Weir's, "all" and "data"
    counted: int = 0  # the runs of the census round the statements were counted over

    def share(self, proc: str) -> float:
        return self.cpu[proc] / self.seconds


async def send(session: aiohttp.ClientSession, stack: Stack, events: list[dict[str, Any]]) -> None:
    async with session.post(f"{stack.weir_url}/e/bench", json=events) as resp:
        body = await resp.json()
        if resp.status != 200:
            raise SystemExit(f"sending events failed: {resp.status} {body}")


def finished(stack: Stack, fn: str) -> tuple[int, int, int]:
    """(completed, not completed but ended, latest end in ms) for one function."""
    [(done, bad, last)] = query(
        stack.db_path,
        "SELECT sum(status = 'COMPLETED'), sum(status IN ('FAILED', 'CANCELLED')), "
        "max(ended_at) FROM runs WHERE function_id = ?",
        stack.functions[fn],
    )
    return int(done or 0), int(bad or 0), int(last or 0)


async def throughput_round(
    session: aiohttp.ClientSession, stack: Stack, fn: str, n: int, batch: int
) -> Round:
    timed = await _drain(session, stack, fn, n, batch)
    census = max(n // 5, min(n, 20))  # the same work, smaller, with Weir's statements counted
    sql0 = await stack.count(True)
    await _drain(session, stack, fn, census, batch)
    sql1 = await stack.statements()  # the census's own, less the two signals' bookkeeping
    await stack.count(False)
    return replace(timed, statements={k: sql1[k] - sql0[k] for k in sql0}, counted=census)


async def _drain(
    session: aiohttp.ClientSession, stack: Stack, fn: str, n: int, batch: int
) -> Round:
    """Send n events of `fn` in batches of `batch`; the time until the last run ended, and
    the CPU Weir and the app spent meanwhile."""
    before, _, _ = finished(stack, fn)
    cpu0 = {p.name: p.cpu_seconds() for p in (stack.weir, stack.app)}
    start = time.time()
    for i in range(0, n, batch):
        await send(session, stack, [{"name": f"bench/{fn}", "data": {}}] * min(batch, n - i))
    deadline = time.monotonic() + 600
    while True:
        done, bad, last_ms = finished(stack, fn)
        if bad:
            raise SystemExit(f"{bad} runs of {fn} failed; see {stack.weir.log}")
        if done >= before + n:
            break
        if time.monotonic() > deadline:
            raise SystemExit(f"only {done - before} of {n} runs of {fn} completed in 600 s")
        await asyncio.sleep(0.02)
    seconds = last_ms / 1000 - start
    cpu = {p.name: p.cpu_seconds() - cpu0[p.name] for p in (stack.weir, stack.app)}
    return Round(seconds, n, cpu)


async def latency_round(
    session: aiohttp.ClientSession, stack: Stack, n: int, pause_s: float
) -> list[float]:
    for _ in range(n):
        await send(session, stack, [{"name": "bench/latency", "data": {"sent": time.time()}}])
        await asyncio.sleep(pause_s)
    seen: list[float] = []
    for _ in range(1000):
        async with session.get(f"{stack.app_url}/bench/first-calls") as resp:
            seen.extend(await resp.json())
        if len(seen) >= n:
            return [s * 1000 for s in seen]
        await asyncio.sleep(0.02)
    raise SystemExit(f"only {len(seen)} of {n} latency runs reached the app")


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


# -- baselines -------------------------------------------------------------------------------


async def http_rate(
    session: aiohttp.ClientSession, url: str, concurrency: int, secs: float
) -> float:
    count = 0
    stop = time.perf_counter() + secs

    async def worker() -> None:
        nonlocal count
        while time.perf_counter() < stop:
            async with session.post(url, data=b'{"event":{},"steps":{}}') as resp:
                await resp.read()
            count += 1

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return count / (time.perf_counter() - start)


async def http_latency_ms(session: aiohttp.ClientSession, url: str, n: int) -> float:
    samples = []
    for _ in range(n):
        start = time.perf_counter()
        async with session.post(url, data=b"{}") as resp:
            await resp.read()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def sqlite_commit_rate(tmp: Path, secs: float) -> float:
    conn = sqlite3.connect(tmp / "baseline.db", isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, payload TEXT)")
    count, start = 0, time.perf_counter()
    while time.perf_counter() - start < secs:
        conn.execute("BEGIN")
        conn.execute("INSERT INTO t (payload) VALUES (?)", ('{"data":{}}',))
        conn.execute("COMMIT")
        count += 1
    rate = count / (time.perf_counter() - start)
    conn.close()
    return rate


# -- the benchmark ---------------------------------------------------------------------------


@dataclass
class Results:
    http_rps: list[float] = field(default_factory=list)
    http_ms: list[float] = field(default_factory=list)
    sqlite_tps: list[float] = field(default_factory=list)
    runs: list[Round] = field(default_factory=list)
    steps: list[Round] = field(default_factory=list)
    checkpointed: list[Round] = field(default_factory=list)
    p50: list[float] = field(default_factory=list)
    p99: list[float] = field(default_factory=list)
    threads: dict[str, float] = field(default_factory=dict)  # Weir CPU seconds per thread group


async def measure(args: argparse.Namespace, tmp: Path) -> dict[str, Results]:
    """Rounds of every workload against each Weir (the current one, and the baseline build
    when asked), interleaved so that both see the same machine, in turn first."""
    builds: dict[str, Path | None] = {"current": None}
    if args.otel:  # the same build beside it, exporting: export off against on, same rounds
        builds["otel"] = None
    if args.baseline_ref:
        builds = {"baseline": baseline_build(args.baseline_ref, tmp), **builds}
    results = {name: Results() for name in builds}
    timeout = aiohttp.ClientTimeout(total=120)
    async with client_session(timeout) as session:
        stacks: dict[str, Stack] = {}
        try:
            sink = OtlpSink() if args.otel else None
            for name, path in builds.items():
                endpoint = sink.endpoint if sink is not None and name == "otel" else None
                stacks[name] = await start_stack(
                    session, tmp, weir_path=path, name=name, otel_endpoint=endpoint
                )
                await warm_up(session, stacks[name])
            for r in range(args.rounds):
                # Each build goes first in every other round: the build measured second may
                # find the other's store still settling (its WAL checkpoint, its runs' last
                # writes); it came out slower in 8 of 10 rounds of session 18's two runs.
                order = list(stacks.items())
                for name, stack in order if r % 2 == 0 else order[::-1]:
                    res = results[name]
                    echo = f"{stack.app_url}/bench/echo"
                    res.http_rps.append(await http_rate(session, echo, 32, 1.5))
                    res.http_ms.append(await http_latency_ms(session, echo, 200))
                    res.sqlite_tps.append(sqlite_commit_rate(tmp, 1.0))
                    res.runs.append(
                        await throughput_round(session, stack, "noop", args.events, 500)
                    )
                    step_runs = max(1, args.step_events)
                    res.steps.append(
                        await throughput_round(session, stack, "steps", step_runs, 500)
                    )
                    res.checkpointed.append(
                        await throughput_round(
                            session, stack, "checkpointed", args.checkpoint_events, 500
                        )
                    )
                    lat = await latency_round(session, stack, args.latency_events, 0.02)
                    res.p50.append(percentile(lat, 50))
                    res.p99.append(percentile(lat, 99))
                    report_round(r, name, res)
        finally:
            for stack in stacks.values():
                stack.stop()
    for name, stack in stacks.items():
        with contextlib.suppress(OSError, ValueError):
            results[name].threads = json.loads(stack.weir_threads.read_text())
    return results


def baseline_build(ref: str, tmp: Path) -> Path:
    """Weir as of git `ref`, unpacked into `tmp`; the returned directory, put first on
    PYTHONPATH, makes `import weir` (and its sub-packages) that build."""
    src, pkg = tmp / "baseline-src", tmp / "baseline-pkg"
    src.mkdir()
    pkg.mkdir()
    archive = subprocess.run(
        ["git", "archive", ref], cwd=ROOT, check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(src)], input=archive, check=True)
    (pkg / "weir").symlink_to(src / "platform" / "_entry")
    _baseline_venv(pkg)
    return pkg


def baseline_python(pkg: Path) -> str:
    """The interpreter that runs the baseline build in `pkg` (see `_baseline_venv`)."""
    return str(pkg.parent / "baseline-venv" / "bin" / "python")


def _baseline_venv(pkg: Path) -> None:
    """A venv whose every process imports the baseline build, isolated ones too: Weir starts
    its ingest workers as `python -I -m ...`, which ignores PYTHONPATH and so, from this
    venv, would import the current tree's modules. One .pth puts the build ahead of this
    venv's packages (read as a plain folder: the editable install of the current tree, set up
    by a .pth of its own there, is left out)."""
    venv = pkg.parent / "baseline-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = Path(sysconfig.get_paths(vars={"base": str(venv), "platbase": str(venv)})["purelib"])
    # this venv's packages, and those of any venv it extends through a .pth (a worktree's)
    ours = [sysconfig.get_paths()["purelib"]]
    ours += [p for p in sys.path if p.endswith("site-packages") and p not in ours]
    (site / "weir-baseline.pth").write_text("\n".join([str(pkg), *ours]) + "\n")


async def warm_up(session: aiohttp.ClientSession, stack: Stack) -> None:
    await throughput_round(session, stack, "noop", 50, 50)
    await throughput_round(session, stack, "steps", 10, 10)
    await throughput_round(session, stack, "checkpointed", 10, 10)
    await latency_round(session, stack, 5, 0.01)


def report_round(r: int, name: str, res: Results) -> None:
    runs, steps, cp = res.runs[-1], res.steps[-1], res.checkpointed[-1]
    print(
        f"  round {r + 1} {name:>8}: {runs.runs / runs.seconds:7.0f} runs/s"
        f" {steps.runs * STEPS / steps.seconds:7.0f} steps/s"
        f" {cp.runs * STEPS / cp.seconds:7.0f} checkpointed steps/s"
        f"  latency p50 {res.p50[-1]:5.1f} ms p99 {res.p99[-1]:6.1f} ms"
        f"  | {per_run(runs)['sql']:5.1f} SQL/run {per_run(runs)['cpu']:5.2f} ms CPU/run"
        f"  {per_step(steps)['sql']:5.1f} SQL/step {per_step(steps)['cpu']:5.2f} ms CPU/step"
        f" ({per_step(cp)['cpu']:4.2f} checkpointed)"
        f"  | http {res.http_rps[-1]:6.0f} req/s, sqlite {res.sqlite_tps[-1]:6.0f} commits/s",
        flush=True,
    )


def per_run(r: Round) -> dict[str, float]:
    """Per run of the no-step function: SQL statements (all, data) and Weir CPU ms."""
    return {
        "sql": r.statements.get("all", 0) / max(1, r.counted),
        "data": r.statements.get("data", 0) / max(1, r.counted),
        "cpu": r.cpu["weir"] / r.runs * 1000,
    }


def per_step(r: Round) -> dict[str, float]:
    """Per step of the 10-step function (its run's own costs spread over its steps)."""
    return {k: v / STEPS for k, v in per_run(r).items()}


def figures(res: Results) -> dict[str, float]:
    med = statistics.median
    steps_s = med([r.runs * STEPS / r.seconds for r in res.steps])
    return {
        "http_rps": med(res.http_rps),
        "http_ms": med(res.http_ms),
        "sqlite_tps": med(res.sqlite_tps),
        "runs_s": med([r.runs / r.seconds for r in res.runs]),
        "steps_s": steps_s,
        "calls_s": steps_s * (STEPS + 1) / STEPS,
        "p50": med(res.p50),
        "p99": med(res.p99),
        "sql_run": med([per_run(r)["sql"] for r in res.runs]),
        "data_run": med([per_run(r)["data"] for r in res.runs]),
        "cpu_run": med([per_run(r)["cpu"] for r in res.runs]),
        "sql_step": med([per_step(r)["sql"] for r in res.steps]),
        "data_step": med([per_step(r)["data"] for r in res.steps]),
        "cpu_step": med([per_step(r)["cpu"] for r in res.steps]),
        "cp_steps_s": med([r.runs * STEPS / r.seconds for r in res.checkpointed]),
        "cp_sql_step": med([per_step(r)["sql"] for r in res.checkpointed]),
        "cp_cpu_step": med([per_step(r)["cpu"] for r in res.checkpointed]),
        "cp_app_cpu_step": med([r.cpu["app"] / r.runs / STEPS * 1000 for r in res.checkpointed]),
    }


def summarise(results: dict[str, Results]) -> None:
    for name, res in results.items():
        summarise_one(name, res)
    if "baseline" in results:
        compare(figures(results["baseline"]), figures(results["current"]))
    if "otel" in results:
        compare(figures(results["current"]), figures(results["otel"]), "export on vs off")


def compare(
    base: dict[str, float], cur: dict[str, float], title: str = "current vs baseline build"
) -> None:
    title += ", same rounds"
    print(f"\n{title:<48} {'baseline':>10} {'current':>10} ratio")
    rows = [
        ("runs/s (no steps)", "runs_s"),
        ("steps/s (10-step function)", "steps_s"),
        ("event -> first call p50 (ms)", "p50"),
        ("event -> first call p99 (ms)", "p99"),
        ("SQL statements per run (all)", "sql_run"),
        ("SQL statements per run (data)", "data_run"),
        ("Weir CPU ms per run", "cpu_run"),
        ("SQL statements per step (all)", "sql_step"),
        ("SQL statements per step (data)", "data_step"),
        ("Weir CPU ms per step", "cpu_step"),
        ("steps/s, the same function checkpointed", "cp_steps_s"),
        ("SQL statements per checkpointed step (all)", "cp_sql_step"),
        ("Weir CPU ms per checkpointed step", "cp_cpu_step"),
    ]
    for label, key in rows:
        ratio = cur[key] / base[key] if base[key] else float("nan")
        print(f"{label:<48} {base[key]:10.2f} {cur[key]:10.2f} {ratio:5.2f}")


def summarise_one(name: str, res: Results) -> None:
    f = figures(res)
    http_rps, http_ms, sqlite_tps = f["http_rps"], f["http_ms"], f["sqlite_tps"]
    runs_s, steps_s, calls_s, p50, p99 = f["runs_s"], f["steps_s"], f["calls_s"], f["p50"], f["p99"]
    print(f"\n[{name}] medians of {len(res.runs)} rounds")
    print(f"baseline  aiohttp -> app's server, 32 in flight   {http_rps:8.0f} req/s")
    print(f"baseline  aiohttp -> app's server, one at a time  {http_ms:8.2f} ms per call")
    print(f"baseline  sqlite3 INSERT+COMMIT, WAL, FULL        {sqlite_tps:8.0f} commits/s")
    print(f"{'':44} {'figure':>10} {'target':>8} {'vs baseline':>12}")
    rows = [
        ("runs/s (no steps)", runs_s, TARGETS["runs/s"], f"{runs_s / http_rps:.3f} of http"),
        (
            "steps/s (10-step function)",
            steps_s,
            TARGETS["steps/s"],
            f"{calls_s / http_rps:.3f} of http",
        ),
        ("  = calls to the app/s", calls_s, None, f"{calls_s / sqlite_tps:.3f} of sqlite"),
        (
            "steps/s (the same, checkpoint=True)",
            f["cp_steps_s"],
            TARGETS["steps/s"],
            f"{f['cp_steps_s'] / steps_s:.2f}x per call",
        ),
        ("event -> first call p50 (ms)", p50, TARGETS["p50 ms"], f"{p50 / http_ms:.1f}x one call"),
        ("event -> first call p99 (ms)", p99, None, f"{p99 / http_ms:.1f}x one call"),
    ]
    for label, value, target, ratio in rows:
        mark = "" if target is None else ("  ok" if _meets(label, value, target) else "  MISSED")
        shown = f"{target:8.0f}" if target is not None else " " * 8
        print(f"{label:<44} {value:10.1f} {shown} {ratio:>12}{mark}")
    share = {p: med_share(res, p) for p in ("weir", "app")}
    print(f"\nCPU in throughput rounds, % of one core: weir {share['weir']:.0f}", end="")
    print(f", app {share['app']:.0f}")
    print(
        f"Weir per run without steps: {f['sql_run']:.1f} SQL statements ({f['data_run']:.1f}"
        f" without transaction control), {f['cpu_run']:.2f} ms CPU"
    )
    print(
        f"Weir per step of the 10-step function: {f['sql_step']:.1f} SQL statements"
        f" ({f['data_step']:.1f} without transaction control), {f['cpu_step']:.2f} ms CPU"
    )
    print(
        f"Per step checkpointed: {f['cp_sql_step']:.1f} SQL statements, {f['cp_cpu_step']:.2f}"
        f" ms Weir CPU, {f['cp_app_cpu_step']:.2f} ms app CPU"
    )
    if res.threads:
        total = sum(res.threads.values())
        split = ", ".join(
            f"{k} {v / total:.0%}" for k, v in sorted(res.threads.items(), key=lambda kv: -kv[1])
        )
        print(f"Weir CPU by thread over its whole life: {split}")


def med_share(res: Results, proc: str) -> float:
    return statistics.median([r.share(proc) for r in res.runs + res.steps]) * 100


def _meets(label: str, value: float, target: float) -> bool:
    return value <= target if "ms" in label else value >= target


# -- profiling -------------------------------------------------------------------------------


async def profile(args: argparse.Namespace, tmp: Path) -> None:
    timeout = aiohttp.ClientTimeout(total=120)
    async with client_session(timeout) as session:
        stack = await start_stack(session, tmp, profiled=True, name="profiled")
        try:
            await warm_up(session, stack)
            runs = await throughput_round(session, stack, "noop", args.profile_events, 500)
            steps = await throughput_round(session, stack, "steps", args.profile_events // 10, 500)
            cp = await throughput_round(session, stack, "checkpointed", args.profile_events, 500)
        finally:
            stack.stop()
    print(
        f"\nprofiled round (slower than unprofiled): {runs.runs / runs.seconds:.0f} runs/s,"
        f" {steps.runs * STEPS / steps.seconds:.0f} steps/s,"
        f" {cp.runs * STEPS / cp.seconds:.0f} checkpointed steps/s"
    )


def print_profile(path: Path, proc: str, top: int) -> None:
    """Top functions by own time (cProfile counts wall time: waits for the GIL, a lock or
    the next job show up as own time of the call that waited)."""
    import pstats

    stats = pstats.Stats(str(path))
    total = sum(v[2] for v in stats.stats.values())  # type: ignore[attr-defined]
    group = Path(f"{path}.name").read_text()
    print(f"\n== {proc} / {group}: {total:.2f} s of own time ==")
    rows = sorted(stats.stats.items(), key=lambda kv: kv[1][2], reverse=True)  # type: ignore[attr-defined]
    print(f"{'own s':>7} {'cum s':>7} {'calls':>9}  function")
    for (filename, line, name), (_cc, calls, own, cum, _callers) in rows[:top]:
        where = filename.replace(str(ROOT) + "/", "").replace(sys.prefix, "<py>")
        print(f"{own:7.2f} {cum:7.2f} {calls:9d}  {name} ({_short(where)}:{line})")


def _short(where: str) -> str:
    marker = "site-packages/"
    return where.split(marker, 1)[1] if marker in where else where


def run_wrapped(mode: str, out: str, module_args: list[str]) -> None:
    """Run `python -m <module_args>` and, at exit, write each thread group's CPU seconds to
    `<out>.cpu.json`; in mode "profile" also run cProfile in every thread, one file per group."""
    import cProfile
    import runpy
    import threading

    profiles: list[tuple[str, cProfile.Profile]] = []
    cpu: dict[str, float] = {}
    original = threading.Thread.run

    def wrapped_run(self: threading.Thread) -> None:
        # Timed by the thread's CPU clock: a wall-clock profile counts the loop's idle waits.
        prof = cProfile.Profile(time.thread_time) if mode == "profile" else None
        if prof is not None:
            profiles.append((self.name, prof))
            prof.enable()
        try:
            original(self)
        finally:
            if prof is not None:
                prof.disable()
            group = thread_group(self.name)
            cpu[group] = cpu.get(group, 0.0) + time.thread_time()

    threading.Thread.run = wrapped_run  # type: ignore[method-assign]
    count_statements(f"{out}.stats.json")
    main = cProfile.Profile(time.thread_time)
    profiles.append(("main", main))
    sys.argv = list(module_args)
    if mode == "profile":
        main.enable()
    try:
        runpy.run_module(module_args[0], run_name="__main__", alter_sys=True)
    except SystemExit:
        pass
    finally:
        main.disable()
        cpu["event loop (main thread)"] = time.thread_time()
        Path(f"{out}.cpu.json").write_text(json.dumps(cpu))
        if mode == "profile":
            _dump(out, profiles)


TX_CONTROL = ("BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE")


def count_statements(path: str) -> None:
    """Count every statement SQLite runs in this process (sqlite3's trace callback sees them
    all, whether SQLAlchemy or raw DB-API code sent them); SIGUSR1 writes the counts to
    `path`, with a sequence number the reader waits for, having first read whether to count
    from here on (`path`.count: "on" or "off"). The callback is set on each connection by the
    thread that opens it and stays; when not counting it returns at once (about half its cost).
    Setting it from the signal handler instead, on connections other threads are using, could
    deadlock: the handler would hold the GIL waiting for a connection's mutex that a thread
    inside a statement holds while its callback waits for the GIL."""
    import threading

    from sqlalchemy import event
    from sqlalchemy.pool import Pool

    per_thread: dict[int, list[int]] = {}  # each thread counts in its own entry: no races
    seq = [0]
    counting = [False]
    control = Path(f"{path}.count")

    def traced(sql: str) -> None:
        if not counting[0]:
            return
        mine = per_thread.get(threading.get_ident())
        if mine is None:
            mine = per_thread[threading.get_ident()] = [0, 0]
        mine[0] += 1
        if not sql.lstrip().upper().startswith(TX_CONTROL):
            mine[1] += 1

    def on_connect(dbapi_conn: Any, _record: Any) -> None:
        if isinstance(dbapi_conn, sqlite3.Connection):
            dbapi_conn.set_trace_callback(traced)

    def dump(_sig: int, _frame: Any) -> None:
        with contextlib.suppress(OSError):
            counting[0] = control.read_text() == "on"
        seq[0] += 1
        counts = list(per_thread.values())
        stats = {"seq": seq[0], "all": sum(c[0] for c in counts), "data": sum(c[1] for c in counts)}
        tmp = f"{path}.tmp"
        Path(tmp).write_text(json.dumps(stats))
        os.replace(tmp, path)

    event.listen(Pool, "connect", on_connect)
    signal.signal(signal.SIGUSR1, dump)


def thread_group(name: str) -> str:
    if name == "main":
        return "event loop (main thread)"
    if name == "weir-writer":
        return "writer thread"
    if name.startswith(("asyncio", "uvloop", "ThreadPoolExecutor")):
        return "reads (to_thread pool)"
    return name.rstrip("0123456789_-") or name


def _dump(out: str, profiles: list[tuple[str, Any]]) -> None:
    import pstats

    groups: dict[str, pstats.Stats] = {}
    for name, prof in profiles:
        group = thread_group(name)
        with contextlib.suppress(TypeError, ValueError):  # a profile that saw nothing
            if group in groups:
                groups[group].add(prof)
            else:
                groups[group] = pstats.Stats(prof)
    for i, (group, stats) in enumerate(groups.items()):
        stats.dump_stats(f"{out}.{i}")
        Path(f"{out}.{i}.name").write_text(group)


# -- entry -----------------------------------------------------------------------------------


def main() -> None:
    if len(sys.argv) > 4 and sys.argv[1] == "_wrapped":
        run_wrapped(sys.argv[2], sys.argv[3], sys.argv[5:])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds per figure (median)")
    parser.add_argument("--events", type=int, default=2000, help="runs per runs/s round")
    parser.add_argument("--step-events", type=int, default=200, help="runs per steps/s round")
    parser.add_argument(
        "--checkpoint-events", type=int, default=1000, help="runs per checkpointed round"
    )
    parser.add_argument("--latency-events", type=int, default=100, help="events per latency round")
    parser.add_argument("--profile", action="store_true", help="add a profiled round; print costs")
    parser.add_argument(
        "--profile-events", type=int, default=600, help="runs in the profiled round"
    )
    parser.add_argument("--top", type=int, default=20, help="functions shown per profile")
    parser.add_argument(
        "--otel",
        action="store_true",
        help="beside the current build, the same build exporting every run's trace (--otel) "
        "to an OTLP/HTTP sink in this process, rounds interleaved",
    )
    parser.add_argument(
        "--baseline-ref",
        default=None,
        help="git commit to run beside the current code, rounds interleaved (e.g. main)",
    )
    args = parser.parse_args()
    print(
        f"Weir on SQLite, no-op handlers; {os.cpu_count()} CPUs; {args.rounds} rounds", flush=True
    )
    started = time.monotonic()
    with _tmpdir() as tmp:
        res = asyncio.run(measure(args, tmp))
        summarise(res)
        if args.profile:
            asyncio.run(profile(args, tmp))
            for proc in ("weir", "app"):
                for path in sorted((tmp / "profiled").glob(f"profile.{proc}.[0-9]")):
                    print_profile(path, proc, args.top)
    print(f"\ntotal {time.monotonic() - started:.0f} s")


class OtlpSink:
    """A local OTLP/HTTP receiver that takes every export and answers success: the collector
    of `--otel` rounds (it reads the bodies, counts them, and decodes nothing)."""

    def __init__(self) -> None:
        self.requests = 0
        self.bytes = 0
        sink = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                sink.bytes += len(self.rfile.read(int(self.headers.get("content-length", "0"))))
                sink.requests += 1
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@contextlib.contextmanager
def _tmpdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="weir-bench-") as name:
        yield Path(name)


if __name__ == "__main__":
    main()
