"""Webhook answers: how long a provider waits for `POST /webhooks/{id}` (issue 40's target:
p99 <= 50 ms for a 10 KB payload), against a plain `POST /e/{key}` of the same event size
measured in the same process, so that the ratio says what verification and the transform add.

A real `weir dev` on a fresh SQLite file; a Standard Webhooks source (signed with the
`standardwebhooks` library, as a provider would) whose CEL transform names the event from the
body; each delivery a new id, so every one is stored (a 2xx only after the event is durable).
Rounds alternate the two routes; each figure is the median over rounds of that round's p50
and p99. Figures depend on the machine's load: record `uptime` beside them.

    .venv/bin/python bench/bench_webhooks.py [--rounds 5] [--deliveries 200]
"""

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx
import standardwebhooks

SECRET = "whsec_" + "c2VjcmV0LXNlY3JldC1zZWNyZXQtYmVuY2g="
SOURCE = {
    "name": "bench",
    "scheme": "standard",
    "secrets": [SECRET],
    "rate_per_s": 10_000,  # the most a source may take: the bench measures answers, not the cap
    "transform": {"name": "'bench/' + body.type", "id": "headers['webhook-id']"},
}
PAD = "x" * (10 * 1024 - 100)  # a 10 KB body
WARM = 20


class Weir:
    def __init__(self, db: Path, port: int, log: Path) -> None:
        args = [sys.executable, "-m", "weir", "dev", "--port", str(port)]
        args += ["--database-url", f"sqlite:///{db}"]
        self.url = f"http://127.0.0.1:{port}"
        self.proc = subprocess.Popen(args, stdout=log.open("wb"), stderr=subprocess.STDOUT)
        for _ in range(600):
            try:
                if httpx.get(f"{self.url}/health/live").status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        raise SystemExit(f"weir did not start; see {log}")

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGINT)
        self.proc.wait(30)


class Timings:
    """Per route, the (p50, p99) in ms of each round."""

    def __init__(self) -> None:
        self.rounds: dict[str, list[tuple[float, float]]] = {"webhook": [], "event": []}

    def add(self, route: str, samples: list[float]) -> None:
        cuts = statistics.quantiles(samples, n=100)
        self.rounds[route].append((statistics.median(samples), cuts[98]))

    def median(self, route: str, index: int) -> float:
        return statistics.median(r[index] for r in self.rounds[route])


def webhook_round(client: httpx.Client, path: str, n: int, tag: str) -> list[float]:
    hook = standardwebhooks.Webhook(SECRET)
    samples = []
    for i in range(WARM + n):
        body = json.dumps({"type": "order.paid", "n": i, "pad": PAD})
        msg_id, now = f"msg_{tag}_{i}", datetime.now(tz=UTC)
        headers = {
            "webhook-id": msg_id,
            "webhook-timestamp": str(int(now.timestamp())),
            "webhook-signature": hook.sign(msg_id, now, body),
            "content-type": "application/json",
        }
        samples.append(_timed(client, path, body, headers))
    return samples[WARM:]


def event_round(client: httpx.Client, n: int, tag: str) -> list[float]:
    samples = []
    for i in range(WARM + n):
        event = {"name": "bench/order.paid", "id": f"ev_{tag}_{i}", "data": {"n": i, "pad": PAD}}
        headers = {"content-type": "application/json"}
        samples.append(_timed(client, "/e/bench", json.dumps(event), headers))
    return samples[WARM:]


def _timed(client: httpx.Client, path: str, body: str, headers: dict[str, str]) -> float:
    started = time.perf_counter()
    resp = client.post(path, content=body.encode(), headers=headers)
    elapsed = (time.perf_counter() - started) * 1000
    if resp.status_code != 200:
        raise SystemExit(f"POST {path} answered {resp.status_code}: {resp.text[:300]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--deliveries", type=int, default=200, help="timed requests a round")
    args = parser.parse_args()
    print(f"load: {os.getloadavg()[0]:.2f} (1 min)")
    timings = Timings()
    with tempfile.TemporaryDirectory(prefix="weir-bench-webhooks-") as tmp:
        weir = Weir(Path(tmp) / "weir.db", _port(), Path(tmp) / "weir.log")
        try:
            with httpx.Client(base_url=weir.url, timeout=60) as client:
                made = client.post("/v1/webhooks", json=SOURCE)
                if made.status_code != 201:
                    raise SystemExit(f"the source was refused: {made.text[:300]}")
                path = made.json()["data"]["path"]
                for r in range(args.rounds):
                    timings.add("webhook", webhook_round(client, path, args.deliveries, str(r)))
                    timings.add("event", event_round(client, args.deliveries, str(r)))
        finally:
            weir.stop()
    report(timings, args)


def report(timings: Timings, args: argparse.Namespace) -> None:
    print(f"{args.rounds} rounds of {args.deliveries} requests of 10 KB; medians over rounds")
    print(f"{'route':<34} {'p50 ms':>8} {'p99 ms':>8}")
    for route, label in (("webhook", "POST /webhooks/{id}"), ("event", "POST /e/{key}")):
        print(f"{label:<34} {timings.median(route, 0):>8.1f} {timings.median(route, 1):>8.1f}")
    p99 = timings.median("webhook", 1)
    ratio = p99 / timings.median("event", 1)
    verdict = "ok" if p99 <= 50 else "OVER 50 ms"
    print(f"webhook p99 {p99:.1f} ms (target 50: {verdict}), {ratio:.2f}x an event's p99")


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


if __name__ == "__main__":
    main()
