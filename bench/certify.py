"""Certification: mixed load while Weir is SIGKILLed over and over, then audits that nothing bent
a rule (the long form of tests/integration/test_certification.py, same implementation).

  sqlite     one Weir process, SIGKILLed every --kill-every seconds of uptime and restarted
  postgres   two Weir processes on one PostgreSQL, SIGKILLed in turn the same way

Load: keyed concurrency with parallel steps, a keyed throttle (a backlog queued before every
kill), a keyed rate limit, sleeps, waits for events, retried steps. Audits, from the app's
fsync'd journal and the store: lost runs, stuck work, concurrency per key at every instant,
throttle starts and rate-limit admissions replayed through the GCRA, committed steps run again.

`--suite capacity` loads FIFO lanes (four, a run per lane every second, each through two steps
and a sleep) and three shared rolling-window meters (10, 50 and 100 starts per second, each
sent bursts above its limit) instead, and proves from the store's ledger that no lane ran two
members at once or out of send order, every lane drained, and no meter authorized more than its
limit in any window (tests/integration/capacity_audit.py).
Exits 1 when any rule was broken. PostgreSQL is the server WEIR_TEST_POSTGRES_URL names.

    .venv/bin/python bench/certify.py [--suite rules|capacity|all] [--backend both]
                                      [--duration 300] [--kill-every 5] [--drain 180] [--results]
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.integration.capacity_audit import CapacityFigures  # noqa: E402
from tests.integration.capacity_certification import certify_capacity  # noqa: E402
from tests.integration.certification import BACKENDS, certify  # noqa: E402
from tests.integration.certification_audit import Figures  # noqa: E402

SUITES = {"rules": certify, "capacity": certify_capacity}
SECTIONS = {"rules": "## Certification", "capacity": "## Capacity certification"}

RESULTS = ROOT / "bench" / "RESULTS.md"


def write_results(
    figures: list[Figures | CapacityFigures], args: argparse.Namespace, suite: str
) -> None:
    """Replace the suite's section of RESULTS.md (or append it) with these figures."""
    section = SECTIONS[suite]
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    body = (
        f"{section}\n`bench/certify.py --suite {suite} --duration {args.duration:g} --kill-every "
        f"{args.kill_every:g}` (SIGKILL after every\n{args.kill_every:g} s of uptime) at "
        f"commit {commit}, finished {when}, load average {load}:\n\n"
        + "\n\n".join(f.table() for f in figures)
        + "\n\n"
        + "\n".join(_verdict(f) for f in figures)
        + "\n"
    )
    old = RESULTS.read_text()
    pattern = re.compile(rf"^{section}\n.*?(?=^## |\Z)", re.S | re.M)
    new = pattern.sub(lambda _: body + "\n", old) if pattern.search(old) else f"{old}\n{body}"
    RESULTS.write_text(new.rstrip("\n") + "\n")


def _verdict(figures: Figures | CapacityFigures) -> str:
    broken = figures.breaches()
    return f"{figures.backend}: " + (
        "certified, no rule broken" if not broken else "; ".join(broken)
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backend", choices=[*BACKENDS, "both"], default="both")
    parser.add_argument(
        "--suite",
        choices=[*SUITES, "all"],
        default="rules",
        help="rules: flow control; "
        "capacity: FIFO lanes and rolling-window meters (10, 50, 100 starts/s)",
    )
    parser.add_argument("--duration", type=float, default=300, help="seconds of load")
    parser.add_argument("--kill-every", type=float, default=5, help="seconds of uptime per kill")
    parser.add_argument("--drain", type=float, default=180, help="seconds to let work finish")
    parser.add_argument("--results", action="store_true", help="write bench/RESULTS.md")
    args = parser.parse_args()
    backends = BACKENDS if args.backend == "both" else (args.backend,)
    suites = list(SUITES) if args.suite == "all" else [args.suite]
    broken = False
    for suite in suites:
        figures: list[Figures | CapacityFigures] = []
        for backend in backends:
            with tempfile.TemporaryDirectory() as tmp:
                run = SUITES[suite]
                figures.append(run(Path(tmp), backend, args.duration, args.kill_every, args.drain))
            print(figures[-1].table() + "\n" + _verdict(figures[-1]) + "\n", flush=True)
        if args.results:
            write_results(figures, args, suite)
        broken = broken or any(f.breaches() for f in figures)
    sys.exit(1 if broken else 0)


if __name__ == "__main__":
    main()
