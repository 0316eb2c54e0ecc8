"""A race of parallel steps runs each branch once: the slow branch, still in flight when the
fast one settles, is not planned again by the discovery calls that follow (with weir.sdk and
with the official inngest SDK)."""

import time
from collections import Counter

import pytest

from tests.integration.harness import AppServer, WeirServer

pytestmark = pytest.mark.integration


def test_a_race_runs_each_branch_body_once(weir_server: WeirServer, app: AppServer) -> None:
    run = weir_server.finished_run(weir_server.send("t/race"))
    assert run["status"] == "Completed"
    assert "fast" in str(run["output"])
    time.sleep(2.5)  # longer than the slow branch: a second copy of it would have noted by now
    executions = Counter(e["step"] for e in app.entries("race") if e["run"] == run["run_id"])
    assert executions == {"fast": 1, "slow": 1}
