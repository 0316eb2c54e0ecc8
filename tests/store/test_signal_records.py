"""Signal waits and deliveries as records, on both backends: a signal name is held by one
wait (the unique index a second waiter's insert loses to, in whatever process it runs), and
a delivery takes the first reply of its own run only."""

import pytest
from sqlalchemy.exc import IntegrityError
from weir.platform.foundation.vocabulary import WaitKind
from weir.platform.store.records import signals as signal_records
from weir.platform.store.records import waits as wait_records
from weir.platform.store.records.signals import Delivery

from tests.support.store_kit import Store


def signal_wait(run_id: str, name: str, kind: WaitKind = WaitKind.SIGNAL) -> wait_records.NewWait:
    return wait_records.NewWait(
        kind=kind, run_id=run_id, step_id="s", event_name=name, created_at=1, expires_at=9
    )


def test_a_signal_name_is_held_by_one_wait(store: Store) -> None:
    store.write(lambda c: wait_records.insert_wait(c, signal_wait("run-1", "order/1")))
    with pytest.raises(IntegrityError):
        store.write(lambda c: wait_records.insert_wait(c, signal_wait("run-2", "order/1")))
    # other names, and event waits of the same name, are not held by it
    store.write(lambda c: wait_records.insert_wait(c, signal_wait("run-2", "order/2")))
    event_wait = signal_wait("run-3", "order/1", WaitKind.WAIT)
    store.write(lambda c: wait_records.insert_wait(c, event_wait))
    held = store.read(lambda c: signal_records.signal_wait(c, "order/1"))
    assert held is not None and held.run_id == "run-1"


def test_a_delivery_takes_the_first_reply_of_its_own_run(store: Store) -> None:
    made = Delivery("d-1", "order/1", "run-1", "s", 5, False, None, None)
    store.write(lambda c: signal_records.record_delivery(c, made))
    assert not store.write(lambda c: signal_records.record_answer(c, "d-1", "run-2", 1, 6))
    assert store.write(lambda c: signal_records.record_answer(c, "d-1", "run-1", {"a": 1}, 7))
    assert not store.write(lambda c: signal_records.record_answer(c, "d-1", "run-1", 2, 8))
    got = store.read(lambda c: signal_records.get_delivery(c, "d-1"))
    assert got is not None and got.answered and got.answer == {"a": 1} and got.answered_at == 7
