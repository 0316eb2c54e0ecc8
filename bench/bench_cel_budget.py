"""Bounded CEL on hostile input: time to answer vs the budget, health meanwhile, fast path cost.

1. In-process fast path: CPU µs per evaluation of typical expressions on a 1 KB event through
   `Expression.evaluate` (cost model + in-process evaluation + result-size check), against a
   baseline in the same process: prune + execute with the same compiled program, which is
   what every evaluation cost before the budget existed.
2. Expression level: how long `evaluate` takes to give up on a ~3 MiB event with the worst
   accepted expressions (quadratic `filter`, string-building `map`), the event given as
   objects and as a Document (bytes, as Weir hands over large events), against the budget,
   and the longest another thread waited meanwhile for a 1 ms sleep (what holding the GIL
   would cost an event loop), against the same wait in an idle process.
3. Ingest level: the phases a large POST goes through before its transaction, in worker
   processes: parsing and checking the ~3 MiB body (`ingest_workers.parse`), the same then
   giving up on the costly trigger `if` where the parsing worker holds the event (as Weir does
   now), against the same parse then giving up on the event sent as bytes to a CEL worker (as
   Weir did before: a second parse, inside the budget), each in ms.
4. Server level: a real `weir dev` process; one function whose trigger `if` is that `filter`
   (and one over line-item objects). POST of a ~3 MiB event that triggers it, against the same
   POST under a name that triggers nothing (ingest and storage alone) and against a 1 KB event
   (the small-event baseline), while another thread GETs /health/live in a loop; its
   latencies (p50, p99, max) against those of an idle server.

Each figure is the median of several runs; the range over the runs follows in brackets.

    .venv/bin/python bench/bench_cel_budget.py [--runs 5] [--only expressions|ingest|server]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import httpx
import orjson
from bench_expressions import make_event
from weir.expressions import (
    BudgetExceeded,
    Document,
    compile_expression,
    current_budget,
    key_hash,
    stable_key,
)
from weir.expressions._evaluate import execute
from weir.expressions._pool import POOL
from weir.expressions._prune import prune
from weir.platform.runtime import keys

FAST = [
    "event.data.accountId",
    'event.data.amount > 100 && event.data.currency == "USD"',
    'event.data.tenantId + "-" + event.data.region',
    'event.data.items.exists(i, i.sku == "sku_3")',
]
FILTER = "event.data.items.filter(i, i > 0).size() > 0"
OBJECTS = "event.data.items.filter(i, i.qty > 0).size() > 0"  # on line-item objects
STRINGS = 'event.data.items.map(i, string(i) + "-" + string(i)).size()'
FAST_CALLS = 2000  # per timed sample; CPU time of this thread, so other processes matter less
HOSTILE_ITEMS = 1_500_000  # [1, 1, …] is ~3 MiB as JSON
SMALL_POSTS = 50  # a small event's POST is timed over this many in a row (answer: each)
ROOT = Path(__file__).resolve().parents[1]


def fast_path(runs: int) -> None:
    print("\n1. fast path on a 1 KB event: CPU µs per evaluation (ratio = now / before)")
    activation = {"event": make_event(1_000)}
    for source in FAST:
        expression = compile_expression(source)
        assert expression.is_cheap(activation), source
        program, trie = expression._program, expression._trie

        def before(program: Any = program, trie: Any = trie, source: str = source) -> Any:
            return execute(program, source, prune(activation, trie))

        now, was = interleaved(lambda e=expression: e.evaluate(activation), before, runs)
        print(f"   {source:<56} now {now:7.2f}  before {was:7.2f}  ratio {now / was:5.2f}")
    print("   a concurrency key as admission evaluates it (memo, event budget) vs as it was:")
    source, event = FAST[0], activation["event"]
    now, was = interleaved(
        lambda: keys.evaluate_key("concurrency", source, event),
        lambda: _key_as_it_was("concurrency", source, event),
        runs,
    )
    label = f"evaluate_key: {source}"
    print(f"   {label:<56} now {now:7.2f}  before {was:7.2f}  ratio {now / was:5.2f}")


def _key_as_it_was(namespace: str, source: str, event: dict[str, Any]) -> tuple[str, str]:
    """runtime.keys.evaluate_key before the budget, on success."""
    text = stable_key(compile_expression(source).evaluate({"event": event}))
    return text[:512], key_hash(f"{namespace}\x00{source}\x00{text}")


def interleaved(
    now: Callable[[], object], before: Callable[[], object], runs: int
) -> tuple[float, float]:
    """Median CPU µs per call of each, measured in alternation so both see the same load."""
    samples: tuple[list[float], list[float]] = ([], [])
    for _ in range(runs * 3):
        for call, into in ((now, samples[0]), (before, samples[1])):
            start = time.thread_time()
            for _ in range(FAST_CALLS):
                call()
            into.append((time.thread_time() - start) / FAST_CALLS * 1e6)
    return statistics.median(samples[0]), statistics.median(samples[1])


def expression_level(runs: int) -> None:
    budget = current_budget().time_ms
    print(f"\n2. giving up on a ~3 MiB event in-process, budget {budget} ms: median ms")
    print("   (stall: the longest another thread of this process waited for a 1 ms sleep)")
    print("   (dict: the event as objects; Document: as bytes, as Weir hands over a large event)")
    event = {"name": "t/big", "data": {"items": [1] * HOSTILE_ITEMS}}
    raw = orjson.dumps(event)
    idle = statistics.median(stall_while(lambda: time.sleep(0.3))[1] for _ in range(runs))
    print(f"   {'idle (baseline)':<60} {'':>10} stall {idle:5.1f} ms")
    for source in (FILTER, STRINGS):
        expression = compile_expression(source)
        for shape in ("dict", "Document"):
            samples = []
            for n in range(runs):
                assert POOL.wait_until_ready(current_budget())  # a replacement starts meanwhile
                activation = {"event": event}
                if shape == "Document":  # a new key each time: no worker has parsed it yet
                    activation = {"event": Document(f"bench-{n}", raw, {}, ("name", "data"))}
                samples.append(stall_while(lambda e=expression, a=activation: _give_up(e, a)))
            took = statistics.median(t for t, _ in samples)
            stall = statistics.median(s for _, s in samples)
            over = f"(budget + {took - budget:.1f})"
            label = f"{shape}: {source}"
            print(f"   {label:<60} {took:7.1f} ms stall {stall:5.1f} ms {over}")


def ingest_level(runs: int) -> None:
    import asyncio  # here: `--only server` also runs against code that has no `foresee`

    from weir.platform.ingest import workers as ingest_workers
    from weir.platform.ingest.validate import event_payload

    budget = current_budget().time_ms
    print(f"\n3. before the transaction, ~3 MiB POST body, budget {budget} ms: median ms")
    ints = {"items": [1] * HOSTILE_ITEMS}
    items = {"items": _line_items(3 * 1024 * 1024 - 4096)}  # as the server level sends them
    bodies = {
        "ints": (json.dumps({"name": "t/big", "data": ints}).encode(), FILTER),
        "objects": (json.dumps({"name": "t/bigobj", "data": items}).encode(), OBJECTS),
    }
    ingest_workers.POOL.warm()
    for label, (body, source) in bodies.items():
        expression = compile_expression(source)

        def parse(body: bytes = body) -> Any:
            return asyncio.run(ingest_workers.parse(body, 1_700_000_000_000))

        def held(body: bytes = body, expression: Any = expression) -> None:
            def foresee(event: Any, evaluate: Any, parse_ms: float = 0.0) -> dict[str, Any]:
                with suppress(BudgetExceeded):
                    evaluate(expression)
                return {}

            asyncio.run(ingest_workers.parse(body, 1_700_000_000_000, foresee))

        def sent(body: bytes = body, expression: Any = expression) -> None:
            [event] = parse(body)
            _give_up(expression, {"event": event_payload(event, f"bench-{time.monotonic()}")})

        figures = []
        for phase in (parse, held, sent):
            samples = []
            for _ in range(runs):
                assert POOL.wait_until_ready(current_budget())
                time.sleep(0.3)  # a stopped worker's replacement starts meanwhile
                start = time.perf_counter()
                phase()
                samples.append((time.perf_counter() - start) * 1000)
            figures.append(_spread(samples))
        print(f"   {label:<8} parse {figures[0]}   parse + held give-up {figures[1]}", end="")
        print(f"   parse + give-up in a CEL worker (before) {figures[2]}")


def _give_up(expression: Any, activation: dict[str, Any]) -> None:
    with suppress(BudgetExceeded):
        expression.evaluate(activation)


def stall_while(busy: Callable[[], None]) -> tuple[float, float]:
    """ms `busy` took, and the longest ms a 1 ms sleep of another thread took meanwhile
    (what the GIL, held by encoding or evaluating, costs an event loop)."""
    longest = [0.0]
    done = threading.Event()

    def ticker() -> None:
        while not done.is_set():
            start = time.perf_counter()
            time.sleep(0.001)
            longest[0] = max(longest[0], (time.perf_counter() - start) * 1000)

    thread = threading.Thread(target=ticker)
    thread.start()
    start = time.perf_counter()
    busy()
    took = (time.perf_counter() - start) * 1000
    done.set()
    thread.join()
    return took, longest[0]


@contextmanager
def weir_dev(tmp: Path) -> Iterator[tuple[str, int]]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    args = [sys.executable, "-m", "weir", "dev", "--port", str(port)]
    args += ["--database-url", f"sqlite:///{tmp / 'weir.db'}"]
    env = os.environ | {"PYTHONUNBUFFERED": "1"}
    with (tmp / "weir.log").open("ab") as log:
        proc = subprocess.Popen(args, cwd=ROOT, env=env, stdout=log, stderr=log)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_live(url, proc)
        yield url, proc.pid
    finally:
        proc.terminate()
        proc.wait(30)


def _wait_live(url: str, proc: subprocess.Popen[bytes]) -> None:
    for _ in range(600):
        if proc.poll() is not None:
            raise SystemExit("weir dev exited early; see its log")
        try:
            if httpx.get(f"{url}/health/live").status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    raise SystemExit("weir dev did not answer within 30 s")


def register(url: str) -> None:
    app = "http://127.0.0.1:1/api/inngest"  # never called: no run is started
    fns = [
        _costly(app, "costly", "t/big", FILTER),
        _costly(app, "costly-objects", "t/bigobj", OBJECTS),
    ]
    body = {"appname": "app", "url": app, "sdk": "py:v0.1.0", "framework": "fast_api"}
    body |= {"v": "0.1", "deploy_type": "ping", "functions": fns}
    httpx.post(f"{url}/fn/register", json=body).raise_for_status()


def _line_items(target_bytes: int) -> list[dict[str, Any]]:
    """Line-item objects (as bench_expressions builds them) filling about `target_bytes`."""
    one = len(json.dumps({"sku": "sku_00000", "qty": 1, "price": 9.99, "tags": ["a"]}) + ", ")
    count = target_bytes // one
    return [
        {"sku": f"sku_{n:05}", "qty": n % 5 + 1, "price": 9.99, "tags": ["a"]} for n in range(count)
    ]


def _costly(app: str, name: str, event: str, expression: str) -> dict[str, Any]:
    step = {"id": "step", "name": "step", "runtime": {"type": "http", "url": f"{app}?fnId={name}"}}
    return {
        "id": f"app-{name}",
        "name": name,
        "triggers": [{"event": event, "expression": expression}],
        "steps": {"step": step},
    }


def health_while(url: str, busy: Callable[[], None]) -> tuple[float, list[float]]:
    """Run `busy` (ms it took) while another thread times GET /health/live (ms each)."""
    latencies: list[float] = []
    done = threading.Event()

    def probe() -> None:
        with httpx.Client() as client:
            while not done.is_set():
                start = time.perf_counter()
                client.get(f"{url}/health/live").raise_for_status()
                latencies.append((time.perf_counter() - start) * 1000)

    prober = threading.Thread(target=probe)
    prober.start()
    start = time.perf_counter()
    busy()
    took = (time.perf_counter() - start) * 1000
    done.set()
    prober.join()
    return took, latencies


def server_level(runs: int) -> None:
    budget = current_budget().time_ms
    print(f"\n4. weir dev, POST of a ~3 MiB event, budget {budget} ms: median over {runs} runs")
    data = {"items": [1] * HOSTILE_ITEMS}
    items = {"items": _line_items(3 * 1024 * 1024 - 4096)}
    bodies = {
        "small 1 KB": json.dumps({"name": "t/none", "data": make_event(1_000)["data"]}).encode(),
        "small, costly if": json.dumps({"name": "t/big", "data": {"items": [1] * 100}}).encode(),
        "plain": json.dumps({"name": "t/none", "data": data}).encode(),
        "hostile": json.dumps({"name": "t/big", "data": data}).encode(),
        "plain objects": json.dumps({"name": "t/none", "data": items}).encode(),
        "hostile objects": json.dumps({"name": "t/bigobj", "data": items}).encode(),
    }
    with tempfile.TemporaryDirectory() as tmp, weir_dev(Path(tmp)) as (url, pid):
        register(url)
        time.sleep(1.0)  # the worker pool warms in the background after the sync
        idle = [health_while(url, lambda: time.sleep(0.5))[1] for _ in range(runs)]
        rows: dict[str, list[tuple[float, list[float]]]] = {label: [] for label in bodies}
        cpus: dict[str, list[float]] = {label: [] for label in bodies}
        with httpx.Client(timeout=120) as client:
            for _ in range(runs):
                for label, body in bodies.items():
                    times = SMALL_POSTS if label.startswith("small") else 1
                    post = _poster(client, url, body, times)
                    took, health = health_while(url, post)
                    rows[label].append((took / times, health))
                    time.sleep(0.5)
                    cpu = _cpu_ms(pid)
                    post()  # again without probes: the serving process's own CPU per POST
                    cpus[label].append((_cpu_ms(pid) - cpu) / times)
                    time.sleep(0.5)  # a stopped worker's replacement starts meanwhile
    _report("idle server", None, idle)
    for label, results in rows.items():
        _report(f"{label} POST", [t for t, _ in results], [h for _, h in results])
    print("   CPU ms of the serving process per POST (its worker processes not counted):")
    print("   " + ", ".join(f"{label} {_spread(cpu)}" for label, cpu in cpus.items()))


def _cpu_ms(pid: int) -> float:
    """User + system CPU of the process so far, in ms (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def _poster(client: httpx.Client, url: str, body: bytes, times: int) -> Callable[[], None]:
    def post() -> None:
        headers = {"content-type": "application/json"}
        for _ in range(times):
            client.post(f"{url}/e/key", content=body, headers=headers).raise_for_status()

    return post


def _report(label: str, took: list[float] | None, health: list[list[float]]) -> None:
    answer = "" if took is None else f"answer {_spread(took)}   "
    rounds = [h for h in health if h]
    p50 = statistics.median(statistics.median(h) for h in rounds)
    p99 = _spread([_percentile(h, 0.99) for h in rounds])
    worst = _spread([max(h) for h in rounds])
    count = statistics.median(len(h) for h in health)
    health_text = f"health p50 {p50:5.1f}, p99 {p99}, max {worst} ms ({count:.0f} GETs)"
    print(f"   {label:<20} {answer}{health_text}")


def _spread(values: list[float]) -> str:
    """The median, and the range over the runs."""
    return f"{statistics.median(values):6.1f} [{min(values):.0f}-{max(values):.0f}]"


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="timed runs per figure (median)")
    parser.add_argument(
        "--only", choices=["expressions", "ingest", "server"], help="only those figures"
    )
    args = parser.parse_args()
    runs = args.runs
    print(f"load: {os.getloadavg()[0]:.2f} (1 min); budget: {current_budget()}")
    if args.only is None:
        fast_path(runs)
    if args.only in (None, "expressions"):
        expression_level(runs)
    if args.only in (None, "ingest"):
        ingest_level(runs)
    if args.only in (None, "server"):
        server_level(runs)
    print(f"load after: {os.getloadavg()[0]:.2f} (1 min)")


if __name__ == "__main__":
    main()
