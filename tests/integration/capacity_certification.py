"""The capacity certification: FIFO lanes and three rolling-window meters (10, 50 and 100
starts per second) under load while Weir is SIGKILLed every few seconds, then audits from the
store's ledger (capacity_audit.py). Same cluster, killer and drain as the rules certification
(certification.py); `tests/integration/test_capacity_certification.py` runs it briefly,
`bench/certify.py --suite capacity` for as long as asked.
"""

from pathlib import Path
from typing import Any

from tests.integration.capacity_audit import CapacityFigures, LedgerCopy, audit_capacity
from tests.integration.certification import AppSpec, Killer, cluster, drain, drive

CAPACITY_APP = AppSpec("tests.integration.apps.weir_capacity", "capacity", "cap/probe")
LANES = 4
# Each meter gets a burst above its limit every few ticks (a tick is 0.5 s): (size, every).
BURSTS = {"m10": (14, 2), "m50": (60, 4), "m100": (120, 6)}


def certify_capacity(
    tmp: Path, backend: str, seconds: float, kill_every: float, drain_s: float
) -> CapacityFigures:
    """Load, kill, drain, audit: the whole capacity certification on one backend."""
    with cluster(tmp, backend, CAPACITY_APP) as running:
        ledger = LedgerCopy(running.database_url)
        ledger.install()
        load = drive(running, seconds, kill_every, _batch)
        drain(running, drain_s)
        url, app = running.database_url, running.app
        return audit_capacity(url, app, load, ledger.entries(), backend, seconds)


def _batch(tick: int, killer: Killer) -> list[dict[str, Any]]:
    """Every second one run per lane, numbered in send order; each meter's burst when due."""
    events: list[dict[str, Any]] = []
    if tick % 2 == 0:
        lanes = [f"L{j}" for j in range(LANES)]
        events += [{"name": "cap/laned", "data": {"lane": lane, "n": tick}} for lane in lanes]
    for meter, (size, every) in BURSTS.items():
        if tick % every == 0:
            events += [{"name": f"cap/{meter}", "data": {"i": i}} for i in range(size)]
    return events
