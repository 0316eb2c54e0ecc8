"""Microseconds per evaluation of typical expressions on a 1 KB and a 50 KB event.

Compares `Expression.evaluate` (activation pruned to the referenced paths) with a baseline in the
same process: the same source compiled by `cel` and executed with the whole, unpruned event dicts.
Each figure is the median of several timed runs.

    .venv/bin/python bench/bench_expressions.py [--runs 7]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

import cel
from weir.expressions import compile_expression

EXPRESSIONS = [
    "event.data.accountId",
    'event.data.amount > 100 && event.data.currency == "USD"',
    'event.name.startsWith("billing/")',
    'event.data.plan == "enterprise" ? 120 : 0',
    "has(event.data.coupon)",
    "async.data.accountId == event.data.accountId",
    # Reads the whole items list: pruning cannot make this one independent of payload size.
    'event.data.items.exists(i, i.sku == "sku_3")',
]
VARIABLES = ("event", "async")
MIN_RUN_SECONDS = 0.02


def make_event(target_bytes: int) -> dict[str, Any]:
    """An event shaped like a real one, with line items added until it reaches the size."""
    data: dict[str, Any] = {
        "accountId": "acc_42",
        "tenantId": "tenant_7",
        "region": "eu-west-1",
        "plan": "enterprise",
        "amount": 150.5,
        "currency": "USD",
        "items": [],
    }
    event = {"name": "billing/invoice.paid", "id": "01HQ", "ts": 1, "user": {}, "v": "1"}
    event["data"] = data
    while len(json.dumps(event)) < target_bytes:
        n = len(data["items"])
        data["items"].append({"sku": f"sku_{n}", "qty": n % 5 + 1, "price": 9.99, "tags": ["a"]})
    return event


def per_call_us(call: Callable[[], object], runs: int) -> float:
    """Median over `runs` of the mean time per call, each run lasting at least ~20 ms."""
    iterations = _calibrate(call)
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        for _ in range(iterations):
            call()
        samples.append((time.perf_counter() - start) / iterations * 1e6)
    return statistics.median(samples)


def _calibrate(call: Callable[[], object]) -> int:
    iterations = 1
    while True:
        start = time.perf_counter()
        for _ in range(iterations):
            call()
        if time.perf_counter() - start >= MIN_RUN_SECONDS:
            return iterations
        iterations *= 2


def measure(source: str, activation: dict[str, Any], runs: int) -> tuple[float, float]:
    ours = compile_expression(source, VARIABLES)
    baseline = cel.compile(source)
    # Fair baseline: every variable the expression reads, each passed whole.
    whole = {name: activation[name] for name in {path[0] for path in ours.paths}}
    assert ours.evaluate(activation) == baseline.execute(whole), source
    return (
        per_call_us(lambda: ours.evaluate(activation), runs),
        per_call_us(lambda: baseline.execute(whole), runs),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="timed runs per figure (median)")
    runs = parser.parse_args().runs
    print(f"median of {runs} runs; µs per evaluation; ratio = weir (pruned) / baseline (whole)")
    for label, size in (("1 KB", 1_000), ("50 KB", 50_000)):
        activation = {"event": make_event(size), "async": make_event(size)}
        print(f"\nevent of {len(json.dumps(activation['event']))} bytes ({label})")
        print(f"{'expression':<58} {'weir µs':>9} {'baseline µs':>12} {'ratio':>7} {'speed-up':>9}")
        for source in EXPRESSIONS:
            ours, baseline = measure(source, activation, runs)
            ratio = f"{ours / baseline:.4f}"
            print(
                f"{source:<58} {ours:>9.1f} {baseline:>12.1f} {ratio:>7} {baseline / ours:>8.0f}x"
            )


if __name__ == "__main__":
    main()
