"""Certification, short: mixed load while Weir is SIGKILLed every 5 s, on SQLite (one process,
restarted) and on PostgreSQL (two processes, killed in turn). Nothing may be lost or stuck, no
limit breached and no committed step run again (bench/certify.py runs it for longer)."""

from pathlib import Path

import pytest

from tests.integration.certification import BACKENDS, certify

# serial: its audit judges timing, which other workers beside it would bend (Makefile)
pytestmark = [pytest.mark.integration, pytest.mark.serial]

LOAD_S, KILL_EVERY_S, DRAIN_S = 30.0, 5.0, 45.0


@pytest.mark.timeout(240)
@pytest.mark.parametrize(
    "backend", [pytest.param(b, marks=[pytest.mark.postgres] * (b == "postgres")) for b in BACKENDS]
)
def test_no_fault_bends_a_rule(tmp_path: Path, backend: str) -> None:
    figures = certify(tmp_path, backend, LOAD_S, KILL_EVERY_S, DRAIN_S)
    print(figures.table())
    assert figures.kills >= 2, figures.table()
    assert figures.rate_admitted < figures.rate_events, "the load went over the rate limit"
    assert figures.retries > 0, "injected failures were retried"
    assert not figures.breaches(), "\n".join([*figures.breaches(), figures.table()])
