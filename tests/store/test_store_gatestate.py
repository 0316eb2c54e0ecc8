"""Gate state: load, save (insert or replace), expiry and drop, per (gate, key)."""

from typing import Any

import pytest
from weir.platform.store.flow import gate_state as gatestate

from tests.support.store_kit import Store

KEY = "ab" * 32


def load(store: Store, now: int, gate: str = "throttle", key: str = KEY) -> dict[str, Any] | None:
    return store.read(lambda c: gatestate.load(c, gate, key, now))


def save(
    store: Store,
    state: dict[str, Any],
    expires_at: int | None,
    gate: str = "throttle",
    key: str = KEY,
) -> None:
    store.write(lambda c: gatestate.save(c, gate, key, state, expires_at))


def test_nothing_saved_loads_as_none(store: Store) -> None:
    assert load(store, now=0) is None


def test_saved_state_loads_back_as_it_was(store: Store) -> None:
    state = {"tat": 1_700_000_000_123, "window": [1, 2.5, "x"], "nested": {"ok": True}}
    save(store, state, expires_at=10_000)
    assert load(store, now=0) == state


def test_saving_again_replaces_the_state_and_its_expiry(store: Store) -> None:
    save(store, {"n": 1}, expires_at=100)
    save(store, {"n": 2}, expires_at=500)
    assert load(store, now=200) == {"n": 2}
    assert store.rows("SELECT count(*) FROM gate_state") == [(1,)]


def test_state_expires_at_its_expiry_time(store: Store) -> None:
    save(store, {"n": 1}, expires_at=100)
    assert load(store, now=99) == {"n": 1}
    assert load(store, now=100) is None
    assert load(store, now=10**12) is None


def test_state_without_expiry_never_expires(store: Store) -> None:
    save(store, {"lock": "run-1"}, expires_at=None)
    assert load(store, now=2**60) == {"lock": "run-1"}


def test_expired_state_can_be_saved_over(store: Store) -> None:
    save(store, {"n": 1}, expires_at=100)
    save(store, {"n": 2}, expires_at=300)
    assert load(store, now=200) == {"n": 2}


def test_state_is_kept_per_gate_and_per_key(store: Store) -> None:
    save(store, {"g": "throttle"}, None, gate="throttle", key=KEY)
    save(store, {"g": "debounce"}, None, gate="debounce", key=KEY)
    save(store, {"g": "other key"}, None, gate="throttle", key="cd" * 32)
    assert load(store, 0, gate="throttle", key=KEY) == {"g": "throttle"}
    assert load(store, 0, gate="debounce", key=KEY) == {"g": "debounce"}
    assert load(store, 0, gate="throttle", key="cd" * 32) == {"g": "other key"}


def test_drop_removes_only_that_state(store: Store) -> None:
    save(store, {"n": 1}, None, gate="batch")
    save(store, {"n": 2}, None, gate="singleton")
    store.write(lambda c: gatestate.drop(c, "batch", KEY))
    store.write(lambda c: gatestate.drop(c, "batch", "absent"))
    assert load(store, 0, gate="batch") is None
    assert load(store, 0, gate="singleton") == {"n": 2}


def test_a_failed_transition_leaves_the_state_as_it_was(store: Store) -> None:
    save(store, {"n": 1}, None)

    def save_then_fail(conn: Any) -> None:
        gatestate.save(conn, "throttle", KEY, {"n": 2}, None)
        raise RuntimeError("admission failed after the meter moved")

    with pytest.raises(RuntimeError):
        store.write(save_then_fail)
    assert load(store, 0) == {"n": 1}
