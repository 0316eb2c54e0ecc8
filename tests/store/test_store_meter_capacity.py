"""Rate meters as live capacities: the claim authorizes starts at the stored limit, not the one
the start item was created with; a change applies to new authorizations only, and the strict
rule stays exact across changes: every authorization at t, made under limit L, finds at most
L authorizations (itself included) in the window ending at t."""

import random
from functools import partial

from weir.platform.foundation.vocabulary import CapacityKind
from weir.platform.store import queue as q
from weir.platform.store.flow import capacity, rolling_windows
from weir.platform.store.flow.rolling_windows import Scope

from tests.support.store_kit import Store, new_item

NOW = 60_000
LEASE = 10**9
WINDOW = 1_000
CAP = "mm" * 16
METER = Scope("ab" * 16, limit=3, window_ms=WINDOW, rate_name="stripe", capacity=CAP)
KIND = CapacityKind.METER


def backlog(store: Store, count: int, scope: Scope = METER) -> None:
    payload = rolling_windows.payload([scope])
    for i in range(count):
        item = new_item("lane-m", score=i, available_at=0, payload=payload)
        store.write(partial(q.enqueue, item=item))


def claim(store: Store, now: int, max_items: int = 50) -> list[q.Claimed]:
    return store.write(lambda c: q.claim(c, now, max_items, LEASE))


def set_limit(store: Store, size: int, revision: int, now: int) -> None:
    done = store.write(lambda c: capacity.set_capacity(c, KIND, CAP, size, revision, "bob", now))
    assert done is not None and done.capacity == size


def declare(store: Store, limit: int = 3) -> None:
    store.write(lambda c: capacity.declare(c, KIND, CAP, "meter stripe", limit, 0))


def test_the_claim_uses_the_stored_limit_not_the_declared_one(store: Store) -> None:
    declare(store)
    set_limit(store, 1, revision=1, now=NOW - 1)
    backlog(store, 5)
    assert len(claim(store, NOW)) == 1
    assert claim(store, NOW + WINDOW - 1) == []
    assert len(claim(store, NOW + WINDOW)) == 1


def test_a_scope_without_a_stored_capacity_keeps_its_declared_limit(store: Store) -> None:
    backlog(store, 5)  # nothing declared (a start enqueued before its app's first sync)
    assert len(claim(store, NOW)) == 3


def test_lowering_applies_to_new_authorizations_only(store: Store) -> None:
    declare(store)
    backlog(store, 8)
    assert len(claim(store, NOW)) == 3  # the three given stay given
    set_limit(store, 1, revision=1, now=NOW + 1)
    assert claim(store, NOW + WINDOW - 1) == []  # three in the window: none under limit 1
    assert len(claim(store, NOW + WINDOW)) == 1
    assert claim(store, NOW + 2 * WINDOW - 1) == []
    assert len(claim(store, NOW + 2 * WINDOW)) == 1


def test_raising_gives_new_authorizations_the_room_at_once(store: Store) -> None:
    declare(store, 1)
    backlog(store, 6)
    assert len(claim(store, NOW)) == 1
    set_limit(store, 4, revision=1, now=NOW + 10)
    backlog(store, 3)  # new starts after the raise: three more fit in the window at once
    assert len(claim(store, NOW + 10)) == 3


def test_the_strict_rule_holds_exactly_across_random_changes(store: Store) -> None:
    declare(store)
    backlog(store, 120)
    rng = random.Random(11)
    revision, limit, now = 1, 3, NOW
    given: list[tuple[int, int]] = []  # (time, limit in force)
    for _ in range(60):
        now += rng.choice((0, 1, 50, 250, 400, 999, 1_000))
        if rng.random() < 0.3:
            limit = rng.randint(1, 5)
            set_limit(store, limit, revision, now)
            revision += 1
        given += [(now, limit)] * len(claim(store, now, max_items=rng.randint(1, 6)))
    assert len(given) > 30  # the loop did authorize runs
    for n, (t, rule) in enumerate(given):  # each counted with those given before it
        in_window = sum(1 for other, _ in given[: n + 1] if t - WINDOW < other <= t)
        assert in_window <= rule, f"{in_window} authorizations in the window ending {t}"
