"""The memos kept between a run's calls, on SQLite and PostgreSQL: a next call reads only the
steps saved since the last one, whoever saved them, and gets exactly what a full read gets."""

from __future__ import annotations

from dataclasses import replace

import pytest
from weir.platform.executor.memos import MemoCache
from weir.platform.runtime import runs
from weir.platform.store import step_records
from weir.platform.store.run_records import Run
from weir.platform.store.step_records import Step
from weir.platform.vocabulary import RunStatus

from tests.support.flow_harness import NOON, Harness


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


def read(h: Harness, cache: MemoCache, run: Run, sinces: list[int]) -> list[Step]:
    """`cache.memos`, noting the step number each read of the store started from."""
    real = step_records.list_steps

    def counted(conn: object, run_id: str, since: int = 0) -> list[Step]:
        sinces.append(since)
        return real(conn, run_id, since)  # type: ignore[arg-type]

    step_records.list_steps = counted  # type: ignore[assignment]
    try:
        with h.engine.connect() as conn:
            return cache.memos(conn, run)
    finally:
        step_records.list_steps = real  # type: ignore[assignment]


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
