"""A paused function's crons and flushed windows on a fake clock (issue 38 item 1): a tick of
a paused function (either mode) keeps its event, marked "function_paused", starts no run and
schedules the next tick; a debounce window flushed while paused in skip mode starts no run."""

from dataclasses import replace

from weir.platform.foundation.vocabulary import EventOutcome, InProgress, PauseMode
from weir.platform.functions import CronTrigger
from weir.platform.functions.config import Debounce
from weir.platform.runtime import cron
from weir.platform.store.records.pauses import FunctionPause

from tests.support.flow_harness import NOON, Harness, config

MINUTE = 60_000


def paused(mode: PauseMode) -> FunctionPause:
    return FunctionPause("fn", mode, InProgress.PAUSE, NOON, "ops")


def test_a_paused_functions_cron_keeps_its_ticks_event_and_starts_nothing(
    database_url: str,
) -> None:
    cfg = replace(config(), triggers=(CronTrigger("* * * * *", None, 0),))
    h = Harness(database_url, cfg)
    with h.tx() as tx:
        cron.ensure_ticks(tx)
    h.registry.paused = {"fn": paused(PauseMode.HOLD)}
    h.advance(NOON + 2 * MINUTE + 1)
    assert h.runs() == []
    skipped = h.outcomes(EventOutcome.FUNCTION_PAUSED)
    assert len(skipped) == 2  # each tick's event is kept, for a replay
    assert skipped[0].detail == "skipped: function paused (hold) by ops"
    h.registry.paused = {}
    h.advance(NOON + 3 * MINUTE + 1)
    assert len(h.runs()) == 1  # the chain of ticks went on meanwhile


def test_a_debounce_window_flushed_while_paused_in_skip_mode_starts_no_run(
    database_url: str,
) -> None:
    h = Harness(database_url, config(debounce=Debounce(5_000, None, None)))
    event_id = h.send(NOON, {"n": 1})
    h.registry.paused = {"fn": paused(PauseMode.SKIP)}
    h.advance(NOON + 10_000)
    assert h.runs() == []
    [outcome] = h.outcomes(EventOutcome.FUNCTION_PAUSED)
    assert outcome.event_id == event_id
    assert outcome.detail.startswith("skipped: function paused since 2026-01-01T12:00:00")
