"""Concurrency scopes under load, on SQLite, with no-op handlers (issue #11 item 2).

A hot scope with limit 1 and N queued runs (a static name; a CEL key all runs share; two
scopes at once), against the same no-op function without any limit, in the same process and
the same round: runs/s and the ratio. Throughput is measured from the store's own records
(first call start to last run end). A claim that fills a scope parks its lane at once, so a
full scope is never looked at again before one of its slots frees (no claim-bounce loop).

    .venv/bin/python bench/bench_scopes.py [--rounds 3] [--runs 1000]
"""

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.bench_flow import throughput  # noqa: E402
from tests.integration.harness import AppServer, WeirServer  # noqa: E402

CASES = (
    ("no limit (baseline)", "scopebench-free", "b/free"),
    ("scope 'hot', limit 1", "scopebench-named", "b/named"),
    ("scope by key, limit 1, one key", "scopebench-keyed", "b/keyed"),
    ("two scopes (1 and 5) at once", "scopebench-two", "b/two"),
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--runs", type=int, default=1000)
    args = parser.parse_args()
    found: dict[str, list[float]] = {label: [] for label, *_ in CASES}
    with tempfile.TemporaryDirectory() as tmp:
        weir = WeirServer(Path(tmp))
        app = AppServer(Path(tmp), "bench.scopes_app", "scopebench", weir.url)
        weir.start()
        app.start()
        try:
            app.sync()
            for r in range(args.rounds):
                for label, slug, event in CASES:
                    datas = [{"k": f"hot{r}"}] * args.runs
                    found[label].append(throughput(weir, slug, event, datas))
        finally:
            app.stop()
            weir.stop()
    base = statistics.median(found[CASES[0][0]])
    for label, rounds in found.items():
        median = statistics.median(rounds)
        print(
            f"{label:34s}: {median:8.1f} runs/s  ratio {median / base:5.3f}  "
            f"rounds {[round(x) for x in rounds]}"
        )


if __name__ == "__main__":
    main()
