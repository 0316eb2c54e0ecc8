"""The memos kept between a run's calls, on SQLite and PostgreSQL: a next call reads only the
steps saved since the last one, whoever saved them, and gets exactly what a full read gets."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace

import pytest
from sqlalchemy import Connection
from weir.platform.executor.driver import Driver
from weir.platform.executor.memos import MemoCache
from weir.platform.foundation.vocabulary import RunStatus
from weir.platform.runtime import runs
from weir.platform.store import queue as q
from weir.platform.store.records import steps as step_records
from weir.platform.store.records.runs import Run
from weir.platform.store.records.steps import Step

from tests.support.flow_harness import NOON, Harness
from tests.support.store_kit import claimed_call


@pytest.fixture
def h(database_url: str) -> Harness:
    harness = Harness(database_url)
    harness.burst(NOON, [{"i": 1}])
    return harness


def save(h: Harness, *step_ids: str) -> Run:
    """Save results as an app's answer would; the run as it then stands."""
    (run,) = h.runs()
    with h.tx() as tx:
        results = [runs.StepResult(s, {"data": s}, "StepRun", s) for s in step_ids]
        runs.save_results(tx, run, results)
    return h.run(run.id)


def everything(h: Harness, run: Run) -> list[Step]:
    with h.engine.connect() as conn:
        return step_records.list_steps(conn, run.id)


@contextmanager
def counted(sinces: list[int]) -> Iterator[None]:
    """Note the step number each read of a run's memos starts from."""
    real = step_records.list_steps

    def counting(conn: Connection, run_id: str, since: int = 0) -> list[Step]:
        sinces.append(since)
        return real(conn, run_id, since)

    step_records.list_steps = counting  # type: ignore[assignment]
    try:
        yield
    finally:
        step_records.list_steps = real  # type: ignore[assignment]


def read(h: Harness, cache: MemoCache, run: Run, sinces: list[int]) -> list[Step]:
    with counted(sinces), h.engine.connect() as conn:
        return cache.memos(conn, run)


def test_a_next_call_reads_only_the_steps_saved_since_the_last(h: Harness) -> None:
    cache, sinces = MemoCache(), []
    run = save(h, "a", "b")
    cache.keep(run, read(h, cache, run, sinces))
    assert sinces == [0]  # nothing kept yet: all of them
    run = save(h, "c")
    got = read(h, cache, run, sinces)
    assert sinces == [0, 2] and got == everything(h, run) and len(got) == 3
    cache.keep(run, got)
    assert read(h, cache, run, sinces) == got and sinces == [0, 2]  # nothing new: no read


def test_a_result_stored_before_leaves_its_number_unused_and_nothing_out(h: Harness) -> None:
    cache, sinces = MemoCache(), []
    run = save(h, "a")
    cache.keep(run, read(h, cache, run, sinces))
    run = save(h, "a", "b", "c")  # "a" again: kept as it was, its new number left unused
    got = read(h, cache, run, sinces)
    assert [m.step_id for m in got] == ["a", "b", "c"] and got == everything(h, run)


def test_memos_kept_from_a_newer_read_than_the_run_are_read_again(h: Harness) -> None:
    cache, sinces = MemoCache(), []
    older = save(h, "a")
    newer = save(h, "b")
    cache.keep(newer, everything(h, newer))
    # e.g. a run row read before another process's save committed: its count is lower
    assert read(h, cache, older, sinces) == everything(h, newer) and sinces == [0]


def test_memos_past_the_run_s_count_as_read_are_not_kept(h: Harness) -> None:
    cache, sinces = MemoCache(), []
    run = save(h, "a")
    later = everything(h, save(h, "b"))  # read after a save the run row does not show yet
    cache.keep(run, later)
    newer = h.run(run.id)
    assert read(h, cache, newer, sinces) == later and sinces == [1]  # "b" read, once


def test_ended_runs_and_runs_storing_much_are_not_kept(h: Harness) -> None:
    cache, sinces = MemoCache(state_bytes=20), []
    run = save(h, "a")
    cache.keep(replace(run, state_bytes=21), everything(h, run))
    read(h, cache, run, sinces)
    cache.keep(replace(run, status=RunStatus.COMPLETED), everything(h, run))
    read(h, cache, run, sinces)
    cache.keep(run, everything(h, run))
    cache.forget([run.id])  # its run ended here
    read(h, cache, run, sinces)
    assert sinces == [0, 0, 0]  # each time read whole


def test_the_runs_called_longest_ago_go_first(h: Harness) -> None:
    cache, sinces = MemoCache(runs=2), []
    run = save(h, "a")
    others = [replace(run, id=f"other-{n}") for n in range(2)]
    cache.keep(run, everything(h, run))
    cache.keep(others[0], [])
    cache.keep(run, everything(h, run))  # called again: now the most recent
    cache.keep(others[1], [])  # one too many: other-0 goes
    read(h, cache, run, sinces)
    assert sinces == []
    assert sorted(cache._known) == sorted([run.id, "other-1"])  # type: ignore[attr-defined]


def test_the_memos_kept_stay_within_their_stored_size_in_all(h: Harness) -> None:
    cache, sinces = MemoCache(total_bytes=100), []
    run = save(h, "a")
    first, second = replace(run, state_bytes=60), replace(run, id="other", state_bytes=50)
    cache.keep(first, everything(h, run))
    cache.keep(second, [])  # 110 bytes in all: the run kept longest ago goes
    read(h, cache, first, sinces)
    assert sinces == [0]
    cache.keep(first, everything(h, run))  # and now "other" goes
    read(h, cache, first, sinces)
    assert sinces == [0]  # "a" kept: nothing read


def claimed(run: Run, token: str) -> q.Claimed:
    return claimed_call(run.id, token, function_id=run.function_id, lane=run.lane)


def test_each_call_of_a_run_is_sent_every_memo_reading_only_the_new(h: Harness) -> None:
    """As the driver makes a run's calls: each state read in the transaction that claims the
    call (`prefetch`), kept once the call takes it (`_state`)."""
    driver = Driver(None, None, None, lambda: None)  # type: ignore[arg-type]
    sinces: list[int] = []
    sent: list[list[str]] = []
    run = h.runs()[0]
    for n, step_id in enumerate(["a", "b", "c", ""]):
        call = claimed(run, f"lease-{n}")
        with counted(sinces), h.engine.begin() as conn:
            driver.prefetch(conn, [call], run=run)
        state = asyncio.run(driver._state(call))  # type: ignore[misc]
        assert state is not None
        sent.append([m.step_id for m in state.memos])
        if step_id:
            run = save(h, step_id)
    assert sent == [[], ["a"], ["a", "b"], ["a", "b", "c"]]
    # the first call had none to read; each later one reads what was saved since the one before
    assert sinces == [0, 1, 2]
