"""The lane view's reads: busy lanes by scope with their holder, fence, queue length and first
run in line; a lane's line in order; both paged. The queue length is a counter the joins and
leaves keep: it must match the line exactly through joins, handoffs and runs leaving the line."""

import threading

import pytest
from weir.platform.reads import lanes
from weir.platform.reads.lanes import BadPaging, Owner
from weir.platform.store.flow import fifo_lanes as fifo
from weir.platform.store.views import fifo_lanes as lane_reads

from tests.support.store_kit import Store

FN_A, FN_B = "fn-a", "fn-b"
SCOPE_A = lane_reads.scope_of(FN_A, None)
SHARED = lane_reads.scope_of(FN_B, "billing")  # named: the function id plays no part


def lane_id(n: int) -> str:
    return f"{n:032x}"


def add_run(store: Store, run_id: str, created_at: int, status: str = "QUEUED") -> None:
    store.write(
        lambda c: c.exec_driver_sql(
            "INSERT INTO runs (id, function_id, status, event_ids, created_at, score, lane) "
            f"VALUES ('{run_id}', '{FN_A}', '{status}', '[]', {created_at}, 0, 'l')"
        )
    )


def join(store: Store, lane: str, run_id: str, now: int, scope: str = SCOPE_A) -> fifo.Joined:
    add_run(store, run_id, now)
    return store.write(
        lambda c: fifo.join(c, lane, f"key-{lane[-2:]}", run_id, now, {}, scope=scope, now=now)
    )


def leave(store: Store, lane: str, run_id: str, now: int) -> fifo.Handoff | None:
    return store.write(lambda c: fifo.leave(c, lane, run_id, now))


def counted(store: Store, lane: str) -> tuple[int, int]:
    """The counter and the real length of the line."""
    [(counter,)] = store.rows("SELECT queued FROM fifo_lanes WHERE lane = :l", l=lane)
    [(real,)] = store.rows("SELECT count(*) FROM fifo_members WHERE lane = :l", l=lane)
    return int(counter), int(real)


def test_a_lane_shows_its_holder_since_when_its_fence_and_who_is_next(store: Store) -> None:
    lane = lane_id(1)
    join(store, lane, "r1", now=100)
    join(store, lane, "r2", now=200)
    join(store, lane, "r3", now=300)
    found = store.read(lambda c: lanes.lane(c, lane))
    assert found is not None
    assert found.holder is not None and found.holder.run_id == "r1"
    assert (found.held_since, found.queued, found.key) == (100, 2, "key-01")
    first_fence = found.fence
    assert found.oldest is not None and found.oldest.run.run_id == "r2"
    assert (found.oldest.run.created_at, found.oldest.run.status) == (200, "QUEUED")

    leave(store, lane, "r1", now=500)  # r2 takes the lane at 500 with the next fence
    found = store.read(lambda c: lanes.lane(c, lane))
    assert found is not None and found.holder is not None and found.holder.run_id == "r2"
    assert (found.held_since, found.queued) == (500, 1)
    assert found.fence > first_fence
    assert found.oldest is not None and found.oldest.run.run_id == "r3"


def test_the_queue_length_follows_joins_handoffs_and_runs_leaving_the_line(store: Store) -> None:
    lane = lane_id(2)
    for n in range(6):
        join(store, lane, f"r{n}", now=n)
    assert counted(store, lane) == (5, 5)
    leave(store, lane, "r3", now=10)  # cancelled while in line
    assert counted(store, lane) == (4, 4)
    leave(store, lane, "r0", now=11)  # handoff to r1
    assert counted(store, lane) == (3, 3)
    leave(store, lane, "r9", now=12)  # never in this lane: nothing changes
    assert counted(store, lane) == (3, 3)
    for run_id in ("r1", "r2", "r4"):
        leave(store, lane, run_id, now=13)
    assert counted(store, lane) == (0, 0)
    leave(store, lane, "r5", now=14)
    assert store.read(lambda c: lanes.lane(c, lane)) is None  # free: its row is gone
    page = store.read(lambda c: lanes.busy_lanes(c, None, None, 10))
    assert page.lanes == []  # free lanes are not busy


def test_busy_lanes_list_by_owner_and_page_with_a_cursor(store: Store) -> None:
    for n in range(5):
        join(store, lane_id(10 + n), f"a{n}", now=n)
    for n in range(3):
        join(store, lane_id(20 + n), f"b{n}", now=n, scope=SHARED)
    join(store, lane_id(20), "b-next", now=9, scope=SHARED)

    own = Owner(FN_A, None)
    first = store.read(lambda c: lanes.busy_lanes(c, own, None, 2))
    assert [row.lane for row in first.lanes] == [lane_id(10), lane_id(11)]
    assert first.next_cursor is not None
    rest = store.read(lambda c: lanes.busy_lanes(c, own, first.next_cursor, 10))
    assert [row.lane for row in rest.lanes] == [lane_id(n) for n in (12, 13, 14)]
    assert rest.next_cursor is None

    named = store.read(lambda c: lanes.busy_lanes(c, Owner(None, "billing"), None, 10))
    assert [(r.lane, r.queued) for r in named.lanes] == [
        (lane_id(20), 1),
        (lane_id(21), 0),
        (lane_id(22), 0),
    ]
    assert Owner.of(named.lanes[0].scope) == Owner(None, "billing")

    everything: list[str] = []
    cursor = None
    while True:
        page = store.read(lambda c, at=cursor: lanes.busy_lanes(c, None, at, 3))
        everything += [row.lane for row in page.lanes]
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert sorted(everything) == sorted([lane_id(n) for n in (10, 11, 12, 13, 14, 20, 21, 22)])
    assert len(everything) == 8  # no lane twice across pages


def test_a_lanes_line_pages_in_order(store: Store) -> None:
    lane = lane_id(3)
    join(store, lane, "holder", now=0)
    for n in range(7):
        join(store, lane, f"m{n}", now=n + 1)
    leave(store, lane, "m2", now=20)
    seen: list[str] = []
    cursor = None
    while True:
        page = store.read(lambda c, at=cursor: lanes.members(c, lane, at, 2))
        seen += [m.run.run_id for m in page.members]
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert seen == ["m0", "m1", "m3", "m4", "m5", "m6"]


@pytest.mark.parametrize("cursor", ["x", "bm90IGpzb24", "WyJhIl0", "WzEsMl0", "W251bGxd"])
def test_a_cursor_the_listing_did_not_give_is_refused(store: Store, cursor: str) -> None:
    with pytest.raises(BadPaging, match="cursor is not one this listing gave"):
        store.read(lambda c: lanes.busy_lanes(c, None, cursor, 5))
    with pytest.raises(BadPaging, match="cursor is not one this listing gave"):
        store.read(lambda c: lanes.members(c, lane_id(1), cursor, 5))


@pytest.mark.parametrize("raw", ["0", "-1", "501", "ten", "", "1.5"])
def test_a_limit_outside_1_to_500_is_refused(raw: str) -> None:
    with pytest.raises(BadPaging, match="limit must be a whole number from 1 to 500"):
        lanes.limit_of(raw)


def test_the_queue_length_stays_exact_with_producers_and_leavers_at_once(store: Store) -> None:
    """Four connections join and leave one lane at the same time (as processes would): the
    counter is kept under the lane row's lock, so it ends equal to the line."""
    lane = lane_id(4)
    join(store, lane, "first", now=0)
    errors: list[BaseException] = []

    def producer(p: int) -> None:
        try:
            for n in range(15):
                with store.engine.begin() as conn:
                    fifo.join(conn, lane, "k", f"p{p}-{n}", n, {}, scope=SCOPE_A, now=n)
                if n % 3 == 0:  # some leave the line again (cancelled while queued)
                    with store.engine.begin() as conn:
                        fifo.leave(conn, lane, f"p{p}-{n}", n)
        except BaseException as exc:  # reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=producer, args=(p,)) for p in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert counted(store, lane) == (4 * 10, 4 * 10)
