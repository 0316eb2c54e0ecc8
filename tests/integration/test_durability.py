"""Durability: SIGKILL the Weir process in the middle of a multi-step run, restart it, and the
run completes without running any step again whose result had been committed."""

import sqlite3
from collections import Counter
from pathlib import Path

import pytest

from tests.integration.harness import SDKS, AppServer, WeirServer, wait_until

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("sdk", sorted(SDKS))
def test_sigkill_mid_run_then_restart_completes_without_rerunning_committed_steps(
    tmp_path: Path, sdk: str
) -> None:
    weir = WeirServer(tmp_path)
    weir.start()
    app = AppServer(tmp_path, SDKS[sdk], f"kill{sdk}", weir.url)
    app.start()
    try:
        app.sync()
        event_id = weir.send("t/durable")
        wait_until(lambda: len(app.entries("durable")) >= 3, timeout=30)
        weir.kill()
        committed = _committed_steps(weir.db)
        assert committed, "some steps had committed before the kill"
        weir.start()
        run = weir.finished_run(event_id, timeout=60)
    finally:
        app.stop()
        weir.stop()
    assert run["status"] == "Completed"
    assert run["output"] == [0, 1, 2, 3, 4, 5]
    executions = Counter(f"s{e['step']}" for e in app.entries("durable"))
    assert set(executions) == {f"s{i}" for i in range(6)}
    for name in committed:
        assert executions[name] == 1, f"{name} had committed yet ran {executions[name]} times"


def _committed_steps(db: Path) -> set[str]:
    with sqlite3.connect(db) as conn:
        return {row[0] for row in conn.execute("SELECT name FROM steps WHERE op = 'StepRun'")}
