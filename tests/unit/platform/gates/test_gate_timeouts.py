"""Run timeouts: start (creation → first step) and finish (first step → end)."""

from __future__ import annotations

import pytest
from weir.platform.gates import timeouts
from weir.platform.gates.timeouts import TimeoutConfig, TimeoutDecision

NOON = 1_767_268_800_000


def test_deadlines() -> None:
    config = TimeoutConfig(start_ms=10_000, finish_ms=60_000)
    assert timeouts.start_deadline(config, NOON) == NOON + 10_000
    assert timeouts.finish_deadline(config, NOON + 3_000) == NOON + 63_000
    assert timeouts.start_deadline(TimeoutConfig(), NOON) is None
    assert timeouts.finish_deadline(TimeoutConfig(), NOON) is None


def test_start_timeout_cancels_a_run_that_never_started() -> None:
    config = TimeoutConfig(start_ms=10_000)
    before = timeouts.check(config, NOON, None, NOON + 9_999)
    at = timeouts.check(config, NOON, None, NOON + 10_000)
    assert before == TimeoutDecision(False, "start", NOON + 10_000, "")
    assert at.cancel
    assert at.which == "start"
    assert at.words == "timeouts.start: deadline 12:00:10.000 passed"


def test_start_timeout_no_longer_applies_once_started() -> None:
    config = TimeoutConfig(start_ms=10_000)
    assert not timeouts.check(config, NOON, NOON + 5_000, NOON + 3_600_000).cancel


def test_finish_timeout_counts_from_first_step() -> None:
    config = TimeoutConfig(start_ms=1_000, finish_ms=30_000)
    first_step = NOON + 500
    assert not timeouts.check(config, NOON, first_step, NOON + 30_499).cancel
    late = timeouts.check(config, NOON, first_step, NOON + 30_500)
    assert late.cancel
    assert late.which == "finish"
    assert late.deadline_ms == NOON + 30_500


def test_no_timeouts_never_cancel() -> None:
    assert timeouts.check(TimeoutConfig(), NOON, None, NOON + 10**12) == TimeoutDecision(
        False, None, None, ""
    )


@pytest.mark.parametrize("field", ["start_ms", "finish_ms"])
def test_non_positive_timeouts_rejected(field: str) -> None:
    with pytest.raises(ValueError, match=r"timeouts\.(start|finish) \(ms\) = 0 .*>= 1"):
        TimeoutConfig(**{field: 0})
