"""Certification: mixed load while Weir is SIGKILLed over and over, then audits that nothing bent
a rule (the long form of tests/integration/test_certification.py, same implementation).

  sqlite     one Weir process, SIGKILLed every --kill-every seconds of uptime and restarted
  postgres   two Weir processes on one PostgreSQL, SIGKILLed in turn the same way

Load: keyed concurrency with parallel steps, a keyed throttle (a backlog queued before every
kill), a keyed rate limit, sleeps, waits for events, retried steps. Audits, from the app's
fsync'd journal and the store: lost runs, stuck work, concurrency per key at every instant,
throttle starts and rate-limit admissions replayed through the GCRA, committed steps run again.
Exits 1 when any rule was broken. PostgreSQL is the server WEIR_TEST_POSTGRES_URL names.

    .venv/bin/python bench/certify.py [--backend both] [--duration 300] [--kill-every 5]
                                      [--drain 180] [--results]
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

from tests.integration.certification import BACKENDS, certify  # noqa: E402
from tests.integration.certification_audit import Figures  # noqa: E402

RESULTS = ROOT / "bench" / "RESULTS.md"
SECTION = "## Certification"


def write_results(figures: list[Figures], args: argparse.Namespace) -> None:
    """Replace the Certification section of RESULTS.md (or append it) with these figures."""
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    body = (
        f"{SECTION}\n`bench/certify.py --duration {args.duration:g} --kill-every "
        f"{args.kill_every:g}` (SIGKILL after every\n{args.kill_every:g} s of uptime) at "
        f"commit {commit}, finished {when}, load average {load}:\n\n"
        + "\n\n".join(f.table() for f in figures)
        + "\n\n"
        + "\n".join(_verdict(f) for f in figures)
        + "\n"
    )
    old = RESULTS.read_text()
    pattern = re.compile(rf"^{SECTION}\n.*?(?=^## |\Z)", re.S | re.M)
    new = pattern.sub(lambda _: body + "\n", old) if pattern.search(old) else f"{old}\n{body}"
    RESULTS.write_text(new.rstrip("\n") + "\n")


def _verdict(figures: Figures) -> str:
    broken = figures.breaches()
    return f"{figures.backend}: " + (
        "certified, no rule broken" if not broken else "; ".join(broken)
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backend", choices=[*BACKENDS, "both"], default="both")
    parser.add_argument("--duration", type=float, default=300, help="seconds of load")
    parser.add_argument("--kill-every", type=float, default=5, help="seconds of uptime per kill")
    parser.add_argument("--drain", type=float, default=180, help="seconds to let work finish")
    parser.add_argument("--results", action="store_true", help="write bench/RESULTS.md")
    args = parser.parse_args()
    backends = BACKENDS if args.backend == "both" else (args.backend,)
    figures = []
    for backend in backends:
        with tempfile.TemporaryDirectory() as tmp:
            figures.append(certify(Path(tmp), backend, args.duration, args.kill_every, args.drain))
        print(figures[-1].table() + "\n" + _verdict(figures[-1]) + "\n", flush=True)
    if args.results:
        write_results(figures, args)
    sys.exit(1 if any(f.breaches() for f in figures) else 0)


if __name__ == "__main__":
    main()
