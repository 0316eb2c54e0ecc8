"""Costly requests do not take the threads everything else needs: while hostile GraphQL
queries or many simulations at once are answered, `/health/live` and a REST read still answer
promptly. Probes on loopback against a real `weir dev` process, bounded in count and time."""

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from tests.api.helpers import function, sync_body
from tests.integration.harness import WeirServer

pytestmark = [pytest.mark.integration, pytest.mark.serial]  # probes time responsiveness

# Before the fix, each took the event loop (the GraphQL) or every store-read thread (the
# simulations) for seconds; after it, a probe answers well within this.
PROMPT_S = 1.5


@pytest.fixture
def weir(tmp_path: Path) -> Iterator[WeirServer]:
    server = WeirServer(tmp_path)
    server.start()
    yield server
    server.stop()


def slowest_probe(url: str, attack: Callable[[], None], probes: int = 200) -> float:
    """Run `attack` on threads of its own while probing `url` every 50 ms (at most `probes`
    times, until the attack ends); the slowest probe's time in seconds."""
    done = threading.Event()

    def attack_then_stop() -> None:
        try:
            attack()
        finally:
            done.set()

    thread = threading.Thread(target=attack_then_stop)
    thread.start()
    slowest = 0.0
    with httpx.Client(timeout=60) as client:
        time.sleep(0.2)  # the attack is under way
        for _ in range(probes):
            if done.is_set():
                break
            started = time.monotonic()
            assert client.get(url).status_code == 200
            slowest = max(slowest, time.monotonic() - started)
            time.sleep(0.05)
    thread.join(120)
    return slowest


def in_parallel(count: int, job: Callable[[], None]) -> None:
    threads = [threading.Thread(target=job) for _ in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)


def test_hostile_graphql_queries_leave_health_prompt(weir: WeirServer) -> None:
    many = "{ " + "functions { id } " * 36_000 + "}"  # ~600 KiB: 5 s on the loop before
    fits = "{ " + "functions { id } " * 3_500 + "}"  # ~60 KiB, under the body cap
    costly = "{ " + " ".join(f"f{i}: functions {{ id slug name url }}" for i in range(100)) + "}"
    answers: list[int] = []

    def attack() -> None:
        with httpx.Client(timeout=60) as client:
            for query in (many, fits, costly) * 2:
                resp = client.post(f"{weir.url}/v0/gql", json={"query": query})
                answers.append(resp.status_code)

    slowest = slowest_probe(f"{weir.url}/health/live", attack)
    assert slowest < PROMPT_S, f"/health/live took {slowest:.2f}s while the queries ran"
    assert answers == [413, 400, 400] * 2  # over the body cap, the tokens, the cost
    ok = httpx.post(f"{weir.url}/v0/gql", json={"query": "{ functions { id slug } }"})
    assert ok.status_code == 200 and ok.json() == {"data": {"functions": []}}
    refused = httpx.post(f"{weir.url}/v0/gql", json={"query": costly}).json()
    assert "maximum cost of 200" in refused["errors"][0]["message"]


def test_many_simulations_leave_rest_reads_and_health_prompt(weir: WeirServer) -> None:
    resp = httpx.post(f"{weir.url}/fn/register", json=sync_body(function("sim", retries=0)))
    assert resp.status_code == 200, resp.text
    event_id = weir.send("t/other")  # triggers nothing: a read of a stored event
    events = [{"at_ms": i * 1000, "data": {"n": i}} for i in range(200)]
    answers: list[int] = []

    def simulate() -> None:
        with httpx.Client(timeout=120) as client:
            for _ in range(2):
                url = f"{weir.url}/v1/functions/app-sim/simulate"
                answers.append(client.post(url, json={"events": events}).status_code)

    slowest_read = slowest_probe(
        f"{weir.url}/v1/events/{event_id}", lambda: in_parallel(8, simulate)
    )
    assert len(answers) == 16 and set(answers) <= {200, 503} and 200 in answers
    assert slowest_read < PROMPT_S, f"a REST read took {slowest_read:.2f}s during simulations"
    slowest_health = slowest_probe(f"{weir.url}/health/live", lambda: in_parallel(8, simulate))
    assert slowest_health < PROMPT_S, f"/health/live took {slowest_health:.2f}s"
    busy = [a for a in answers if a == 503]
    assert len(answers) == 32 and busy  # eight at once: the line is bounded
