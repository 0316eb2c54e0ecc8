"""FIFO lanes wired into admission and a run's end: one run per lane at a time, in admission
order; queued runs have no queue item; the lane holds through a run's whole life; each new
holder gets a higher fence; runs on SQLite and PostgreSQL."""

from __future__ import annotations

from sqlalchemy import delete, func, select
from sqlalchemy import event as sa_event
from weir.platform.foundation.vocabulary import RunStatus
from weir.platform.functions import Lane
from weir.platform.functions.config import ConcurrencyLimit
from weir.platform.reads import runs as reads_runs
from weir.platform.runtime import runs as run_ops
from weir.platform.store import queue as q
from weir.platform.store.engine.schema import fifo_lanes, queue
from weir.platform.store.flow import fifo_lanes as fifo

from tests.support.flow_harness import NOON, Harness, config, event_ids

S = 1000


def laned(database_url: str, key: str | None = "event.data.c", **more: object) -> Harness:
    return Harness(database_url, config(lane=Lane(key=key, name=None), **more))  # type: ignore[arg-type]


def end(h: Harness, run_id: str, at: int, status: str = "COMPLETED") -> None:
    """The run's last call answered and ended it: its item goes in the same transaction, as
    when the executor's outcome is applied."""
    with h.tx(at) as tx:
        tx.conn.execute(delete(queue).where(queue.c.run_id == run_id, queue.c.kind == "exec"))
        run_ops.finish_run(tx, run_id, RunStatus(status), None)


def exec_run_ids(h: Harness) -> list[str]:
    return [str(row.run_id) for row in h.queued("exec")]


def lane_hash(h: Harness, run_id: str) -> str:
    return str(h.run(run_id).keys["lane"]["hash"])


def test_runs_of_one_lane_queue_behind_the_first_with_no_queue_item(database_url: str) -> None:
    h = laned(database_url)
    h.burst(NOON, [{"c": "acme", "i": i} for i in range(5)])
    runs = h.runs()
    assert len(runs) == 5
    assert exec_run_ids(h) == [runs[0].id]  # only the holder is in the queue at all
    for queued in runs[1:]:
        assert queued.status == "QUEUED"
        assert queued.waiting is not None
        assert queued.waiting["gate"] == "lane"
        assert queued.waiting["key"] == "acme"
        assert queued.waiting["holder_run_id"] == runs[0].id
        assert f"queued behind run {runs[0].id}" in queued.waiting["words"]
    assert runs[0].waiting is None


def test_different_keys_are_different_lanes(database_url: str) -> None:
    h = laned(database_url)
    h.burst(NOON, [{"c": "a"}, {"c": "b"}, {"c": "a"}, {"c": "c"}])
    a1, b, a2, c = h.runs()
    assert sorted(exec_run_ids(h)) == sorted([a1.id, b.id, c.id])
    assert a2.waiting is not None and a2.waiting["holder_run_id"] == a1.id


def test_each_run_starts_only_after_the_one_before_ended_in_order(database_url: str) -> None:
    h = laned(database_url)
    for i in range(4):  # one event per request: four transactions, in this order
        h.send(NOON + i, {"c": "acme", "i": i})
    runs = h.runs()
    order = []
    for i, run in enumerate(runs):
        assert exec_run_ids(h) == [run.id], f"step {i}: only the next in line is queued"
        order.append(run.id)
        h.mark_started(run.id, NOON + 10 * S + i)
        end(h, run.id, NOON + 20 * S + i, status=("COMPLETED", "FAILED", "CANCELLED")[i % 3])
    assert order == [r.id for r in runs]
    assert exec_run_ids(h) == []
    assert h.run(runs[1].id).waiting is None  # the lane's reason went when it got the lane


def test_the_lane_holds_while_its_holder_sleeps_or_waits(database_url: str) -> None:
    h = laned(database_url)
    h.burst(NOON, [{"c": "x"}, {"c": "x"}])
    first, second = h.runs()
    h.advance(NOON + 1)  # the first call is claimed (and stays leased in this harness)
    h.mark_started(first.id, NOON + 1)
    with h.tx(NOON + 2) as tx:  # its call ended with a sleep: no queue item of it is leased
        (item,) = [i for i in h.queued("exec") if i.run_id == first.id]
        tx.conn.execute(queue.delete().where(queue.c.id == item.id))
    h.advance(NOON + 60 * S)
    assert exec_run_ids(h) == []  # the second is still held: the first has not ended
    assert h.run(second.id).waiting is not None
    end(h, first.id, NOON + 61 * S)
    assert exec_run_ids(h) == [second.id]


def test_a_run_cancelled_while_queued_leaves_the_line(database_url: str) -> None:
    h = laned(database_url)
    h.burst(NOON, [{"c": "x"}] * 3)
    first, second, third = h.runs()
    end(h, second.id, NOON + S, status="CANCELLED")  # still queued behind the first
    assert exec_run_ids(h) == [first.id]
    with h.engine.connect() as conn:
        assert fifo.holder(conn, lane_hash(h, first.id)) == first.id
    end(h, first.id, NOON + 2 * S)
    assert exec_run_ids(h) == [third.id]


def test_fences_go_up_with_every_new_holder_and_survive_an_empty_lane(database_url: str) -> None:
    h = laned(database_url)
    h.burst(NOON, [{"c": "x"}] * 2)
    first, second = h.runs()
    lane = lane_hash(h, first.id)
    with h.engine.connect() as conn:
        one = fifo.fence(conn, lane, first.id)
        assert one is not None
        assert fifo.fence(conn, lane, second.id) is None  # not the holder yet
    end(h, first.id, NOON + S)
    with h.engine.connect() as conn:
        two = fifo.fence(conn, lane, second.id)
        assert two is not None and two > one
    assert fifo.run_fences(h.run(second.id).keys) == {"lane": two}  # what its calls carry
    assert fifo.run_fences(h.run(first.id).keys) == {"lane": one}
    end(h, second.id, NOON + 2 * S)  # the lane is empty now: its row goes
    with h.engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(fifo_lanes)).scalar() == 0
    h.restart()  # a new process: only the store remains
    h.send(NOON + 3 * S, {"c": "x"})
    third = h.runs()[-1]
    with h.engine.connect() as conn:
        assert fifo.holder(conn, lane) == third.id
        assert (fifo.fence(conn, lane, third.id) or 0) > two  # its row was gone meanwhile


def test_a_named_lane_is_shared_by_the_functions_naming_it(database_url: str) -> None:
    shared = Lane(key="event.data.c", name="billing")
    h = Harness(database_url, config("f1", lane=shared), config("f2", lane=shared))
    h.send(NOON, {"c": "x"})
    r1, r2 = h.runs()
    assert {r1.function_id, r2.function_id} == {"f1", "f2"}
    assert len(exec_run_ids(h)) == 1
    held = r2 if exec_run_ids(h) == [r1.id] else r1
    assert held.waiting is not None and held.waiting["gate"] == "lane"


def test_a_named_lane_is_shared_by_value_whatever_each_key_expression(database_url: str) -> None:
    h = Harness(
        database_url,
        config("f1", lane=Lane(key="event.data.c", name="billing")),
        config("f2", lane=Lane(key="string(event.data.c)", name="billing")),
        config("f3", lane=Lane(key="event.data.c", name="other")),
    )
    h.send(NOON, {"c": "x"})
    assert len(h.runs()) == 3
    assert len(exec_run_ids(h)) == 2  # f1 and f2 share a line; f3's lane is another name


def test_unnamed_lanes_of_two_functions_do_not_interact(database_url: str) -> None:
    own = Lane(key="event.data.c", name=None)
    h = Harness(database_url, config("f1", lane=own), config("f2", lane=own))
    h.send(NOON, {"c": "x"})
    assert len(exec_run_ids(h)) == 2


def test_a_failing_key_puts_the_run_in_the_empty_key_lane_with_a_warning(
    database_url: str,
) -> None:
    h = laned(database_url)
    h.burst(NOON, [{}, {}])
    first, second = h.runs()
    assert any(w.startswith("lane: key expression") for w in first.warnings)
    assert second.waiting is not None and second.waiting["holder_run_id"] == first.id


def test_an_ended_holder_with_a_call_in_flight_hands_on_when_the_call_is_over(
    database_url: str,
) -> None:
    h = laned(database_url)
    h.burst(NOON, [{"c": "x"}] * 2)
    first, second = h.runs()
    with h.engine.begin() as conn:  # the first call is claimed with a 30 s lease
        (item,) = q.claim(conn, NOON, 10, 30 * S)
    with h.tx(NOON + S) as tx:  # cancelled while its step executes
        run_ops.cancel_run(tx, first.id, "test")
    assert exec_run_ids(h) == [first.id]  # only the call still in flight: nobody else runs
    with h.engine.connect() as conn:
        assert q.in_flight_until(conn, first.id) == NOON + 30 * S
    with h.engine.begin() as conn:  # the call returns; its item is finished
        q.finish(conn, item, NOON + 5 * S)
    h.advance(NOON + 30 * S)  # the look-again timer at the lease's end hands the lane on
    assert exec_run_ids(h) == [second.id]


def test_queued_members_are_never_read_by_the_claimer(database_url: str) -> None:
    h = Harness(
        database_url,
        config("laned", lane=Lane(key="'one'", name=None)),
        config("other"),
    )
    h.burst(NOON, [{}] * 300)  # 300 runs of "laned" (one lane) and 300 of "other"
    statements: list[str] = []

    def seen(_conn: object, _cursor: object, sql: str, *_: object) -> None:
        statements.append(sql)

    sa_event.listen(h.engine, "before_cursor_execute", seen)
    with h.engine.begin() as conn:
        claimed = q.claim(conn, NOON, 1000, 30 * S)
    sa_event.remove(h.engine, "before_cursor_execute", seen)
    laned_runs = h.runs("laned")
    assert len(laned_runs) == 300
    assert [i.run_id for i in claimed if i.function_id == "laned"] == [laned_runs[0].id]
    assert len([i for i in claimed if i.function_id == "other"]) == 300
    assert not [s for s in statements if "fifo" in s]


def test_lanes_keep_concurrency_limits_too(database_url: str) -> None:
    limit = ConcurrencyLimit(limit=1, key=None, scope="fn")
    h = laned(database_url, concurrency=(limit,))
    h.burst(NOON, [{"c": "a"}, {"c": "b"}, {"c": "a"}])
    a1, _, a2 = h.runs()
    with h.engine.begin() as conn:
        claimed = q.claim(conn, NOON, 10, 30 * S)
    assert [i.run_id for i in claimed] == [a1.id]  # b waits for the slot, a2 for its lane
    assert event_ids(a2) and a2.waiting is not None


def test_a_queued_run_names_the_current_holder_when_read(database_url: str) -> None:
    h = laned(database_url)
    h.burst(NOON, [{"c": "x"}] * 3)
    first, second, third = h.runs()
    end(h, first.id, NOON + S)
    assert h.run(third.id).waiting["holder_run_id"] == first.id  # as stored when it joined
    with h.engine.connect() as conn:
        shown = reads_runs.run(conn, third.id)
        view = reads_runs.run_view(conn, third.id, NOON + S, {})
    assert shown is not None and shown.waiting is not None
    assert shown.waiting["holder_run_id"] == second.id
    assert f"queued behind run {second.id}" in shown.waiting["words"]
    assert view is not None and view.run.waiting == shown.waiting
    assert view.state is not None and f"queued behind run {second.id}" in view.state.words
