"""The lanes a claim looks at: every due lane, lowest head score first, whichever way the store
finds them (the bounded walk by head score, or the sort of every due lane)."""

import random

import pytest
from sqlalchemy import Connection, insert, text
from weir.platform.store.engine.schema import lanes
from weir.platform.store.queue import partitions as d

from tests.support.backends import ONLY_SQLITE
from tests.support.store_kit import Store

NOW = 1_000_000


def _put(store: Store, rows: list[tuple[str, int, int]]) -> None:
    """Lanes as (name, next_at, head_score), each of function `fn-<name>` but the timers'."""
    values = [
        {"lane": n, "next_at": at, "head_score": s, "limits": "[]", "function_id": _fn(n)}
        for n, at, s in rows
    ]

    def job(conn: Connection) -> None:
        conn.execute(text("DELETE FROM lanes"))
        conn.execute(insert(lanes), values)

    store.write(job)


def _fn(lane: str) -> str | None:
    return None if lane == "~timers" else f"fn-{lane}"


def _expected(rows: list[tuple[str, int, int]], limit: int) -> list[tuple[int, str]]:
    """(head score, lane) of the `limit` due lanes with the lowest head scores."""
    return sorted((s, n) for n, at, s in rows if at <= NOW)[:limit]


def _found(store: Store, rows: list[tuple[str, int, int]], limit: int) -> list[tuple[int, str]]:
    score = {n: s for n, _, s in rows}
    found = store.write(lambda c: d.due_lanes(c, NOW, limit))
    return [(score[row.lane], row.lane) for row in found]


def test_lanes_in_flight_ahead_of_the_due_ones_are_passed_over(store: Store) -> None:
    in_flight = [(f"busy{i:03}", NOW + 30_000, i) for i in range(d.WINDOW // 2)]
    due = [(f"due{i:03}", NOW - 5, 1_000 + i) for i in range(d.WINDOW)]  # the window is bound
    _put(store, in_flight + due)
    assert _found(store, in_flight + due, 3) == [
        (1_000, "due000"),
        (1_001, "due001"),
        (1_002, "due002"),
    ]


def test_due_lanes_beyond_a_window_of_lanes_not_due_are_found(store: Store) -> None:
    parked = [(f"parked{i:04}", NOW + 30_000, i) for i in range(d.WINDOW + 20)]
    due = [(f"due{i}", NOW, 10_000 + i) for i in range(3)]
    _put(store, parked + due)
    assert _found(store, parked + due, 5) == _expected(parked + due, 5)
    assert len(_found(store, parked + due, 5)) == 3


def test_lanes_sharing_a_head_score_and_a_due_time_do_not_hide_the_due_ones(
    store: Store,
) -> None:
    """A batch admitted in one transaction and parked on one full key: one score, one due
    time, for more lanes than the window holds."""
    parked = [(f"parked{i:04}", NOW + 30_000, 7) for i in range(3 * d.WINDOW)]
    due = [("due-same-score", NOW, 7), ("due-later-score", NOW - 1, 8)]
    _put(store, parked + due)
    assert _found(store, parked + due, 1) == [(7, "due-same-score")]
    assert _found(store, parked + due, 5) == [(7, "due-same-score"), (8, "due-later-score")]
    tied_due = [(f"tied{i:04}", NOW, 7) for i in range(3 * d.WINDOW)]
    _put(store, tied_due)
    assert len(_found(store, tied_due, 300)) == 300


def test_a_lane_due_exactly_now_is_due_and_one_due_later_is_not(store: Store) -> None:
    rows = [("now", NOW, 5), ("later", NOW + 1, 1)]
    _put(store, rows)
    assert _found(store, rows, 10) == [(5, "now")]


def test_no_lane_is_due(store: Store) -> None:
    rows = [(f"l{i}", NOW + 1 + i, i) for i in range(10)]
    _put(store, rows)
    assert _found(store, rows, 4) == []


@pytest.mark.parametrize("seed", range(6))
def test_any_mix_of_lanes_gives_the_due_lanes_in_head_score_order(store: Store, seed: int) -> None:
    rng = random.Random(seed)
    size = rng.choice([5, d.WINDOW - 1, d.WINDOW, d.WINDOW + 1, 3 * d.WINDOW])
    rows = [
        (f"l{i:05}", NOW + rng.choice([-1_000, 0, 1, 30_000]), rng.randrange(0, size // 2 + 2))
        for i in range(size)
    ]
    _put(store, rows)
    for limit in (1, 7, 128, size + 1):
        found = _found(store, rows, limit)
        # head scores tie: the lanes among a tie may come in any order, the scores may not
        assert [s for s, _ in found] == [s for s, _ in _expected(rows, limit)]
        assert len({n for _, n in found}) == len(found)
        due_at = {n: at for n, at, _ in rows}
        assert all(due_at[n] <= NOW for _, n in found)


@pytest.mark.parametrize("seed", range(6))
def test_due_before_finds_older_due_work_in_and_past_the_window(store: Store, seed: int) -> None:
    rng = random.Random(seed)
    size = rng.choice([3, d.WINDOW, d.WINDOW + 2, 3 * d.WINDOW])
    rows = [
        (f"l{i:05}", NOW + rng.choice([-1_000, 0, 1, 30_000, 30_000]), rng.randrange(0, size))
        for i in range(size)
    ]
    _put(store, rows)
    for score in sorted({s for _, _, s in rows} | {-1, size + 1}):
        older = [at for _, at, s in rows if s <= score]
        expected = any(at <= NOW for at in older)
        found = store.write(lambda c, score=score: d.due_before(c, NOW, score))
        assert found == expected, (score, len(older))


def test_due_before_looks_past_a_window_of_lanes_in_flight(store: Store) -> None:
    in_flight = [(f"busy{i:04}", NOW + 30_000, i) for i in range(d.WINDOW + 10)]
    young = [(f"young{i:04}", NOW, 50_000 + i) for i in range(d.DUE_LOOKED - 1)]
    _put(store, [*in_flight, *young])
    assert store.write(lambda c: d.due_before(c, NOW, 49_999)) is False  # none as old is due
    _put(store, [*in_flight, ("old", NOW, d.WINDOW + 5), *young])
    assert store.write(lambda c: d.due_before(c, NOW, 49_999)) is True


@ONLY_SQLITE
def test_due_before_on_sqlite_answers_yes_past_both_of_its_bounds(store: Store) -> None:
    # a full window of older lanes, none due, and DUE_LOOKED due lanes looked at: a yes,
    # which only leaves the item to the claim (PostgreSQL's one statement is exact)
    in_flight = [(f"busy{i:04}", NOW + 30_000, i) for i in range(d.WINDOW + 10)]
    young = [(f"young{i:04}", NOW, 50_000 + i) for i in range(d.DUE_LOOKED)]
    _put(store, [*in_flight, *young])
    assert store.write(lambda c: d.due_before(c, NOW, 49_999)) is True


def test_due_before_answers_no_only_when_nothing_as_old_is_due(store: Store) -> None:
    rows = [("in-flight", NOW + 30_000, 1), ("due", NOW, 5), ("later", NOW + 1, 2)]
    _put(store, rows)
    assert store.write(lambda c: d.due_before(c, NOW, 4)) is False
    assert store.write(lambda c: d.due_before(c, NOW, 5)) is True  # as old counts
    assert store.write(lambda c: d.due_before(c, NOW + 1, 4)) is True  # "later" is due then


def test_lanes_of_functions_to_skip_are_passed_over_on_either_path(store: Store) -> None:
    """The timers' lane holds items of every function: it is never passed over."""
    parked = [(f"parked{i:04}", NOW + 30_000, i) for i in range(d.WINDOW + 5)]
    due = [(f"due{i}", NOW, 10_000 + i) for i in range(4)] + [("~timers", NOW, 20_000)]
    _put(store, parked + due)
    skip = {"fn-due0", "fn-due2"}
    found = store.write(lambda c: d.due_lanes(c, NOW, 5, skip=skip))
    assert [row.lane for row in found] == ["due1", "due3", "~timers"]
    _put(store, due)  # within the window: the walk alone
    found = store.write(lambda c: d.due_lanes(c, NOW, 1, skip={"fn-due0"}))
    assert [row.lane for row in found] == ["due1"]
    found = store.write(lambda c: d.due_lanes(c, NOW, 9, skip={f"fn-due{i}" for i in range(4)}))
    assert [row.lane for row in found] == ["~timers"]
