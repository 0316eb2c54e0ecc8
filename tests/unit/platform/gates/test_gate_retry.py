"""Retries: the backoff table, jitter bounds with a seeded RNG, Retry-After clamping."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st
from weir.platform.gates import retry
from weir.platform.gates.decisions import MS_PER_H, MS_PER_MIN, MS_PER_S

NOON = 1_767_268_800_000


class FixedRng:
    def __init__(self, value: int) -> None:
        self.value = value

    def randint(self, a: int, b: int) -> int:
        assert (a, b) == (0, 30_000)
        return self.value


@pytest.mark.parametrize(
    ("attempt", "base"),
    [
        (0, 15 * MS_PER_S),
        (1, 30 * MS_PER_S),
        (2, 1 * MS_PER_MIN),
        (3, 2 * MS_PER_MIN),
        (4, 5 * MS_PER_MIN),
        (5, 10 * MS_PER_MIN),
        (6, 20 * MS_PER_MIN),
        (7, 40 * MS_PER_MIN),
        (8, 1 * MS_PER_H),
        (9, 2 * MS_PER_H),
        (19, 2 * MS_PER_H),
        (1_000, 2 * MS_PER_H),
    ],
)
def test_backoff_table(attempt: int, base: int) -> None:
    assert retry.backoff_ms(attempt) == base
    assert retry.next_attempt_at(attempt, NOON, FixedRng(0)) == NOON + base
    assert retry.next_attempt_at(attempt, NOON, FixedRng(30_000)) == NOON + base + 30_000


def test_seeded_jitter_is_reproducible_and_within_bounds() -> None:
    def delays(seed: int) -> list[int]:
        rng = random.Random(seed)
        return [retry.next_attempt_at(0, NOON, rng) - NOON for _ in range(2_000)]

    first = delays(7)
    assert first == delays(7)
    assert all(15_000 <= d <= 45_000 for d in first)
    assert min(first) < 16_000
    assert max(first) > 44_000
    assert len(set(first)) > 1_000


def test_retry_after_overrides_backoff_without_jitter() -> None:
    assert retry.next_attempt_at(3, NOON, FixedRng(999), NOON + 90_000) == NOON + 90_000


@given(st.integers(min_value=-(10**12), max_value=10**12))
def test_retry_after_is_clamped(offset: int) -> None:
    at = retry.next_attempt_at(0, NOON, FixedRng(0), NOON + offset)
    assert NOON + 1_000 <= at <= NOON + 24 * MS_PER_H
    if 1_000 <= offset <= 24 * MS_PER_H:
        assert at == NOON + offset


def test_default_and_capped_retries() -> None:
    assert retry.max_attempts(None) == 5
    assert retry.max_attempts(0) == 1
    assert retry.max_attempts(20) == 21
    assert retry.max_attempts(50) == 21
    with pytest.raises(ValueError, match=r"retries = -1 .*allowed: >= 0"):
        retry.max_attempts(-1)


def test_decide_retries_until_attempts_run_out() -> None:
    rng = FixedRng(0)
    outcomes = [retry.decide(n, None, NOON, rng) for n in range(6)]
    assert [o.retry for o in outcomes] == [True, True, True, True, False, False]
    assert outcomes[0].at_ms == NOON + 15_000
    assert outcomes[3].at_ms == NOON + 2 * MS_PER_MIN
    assert outcomes[4].at_ms is None


def test_non_retriable_error_is_final_at_once() -> None:
    assert retry.decide(0, 10, NOON, FixedRng(0), retriable=False) == retry.RetryDecision(
        False, None
    )


def test_negative_attempt_rejected() -> None:
    with pytest.raises(ValueError, match=r"attempt = -1"):
        retry.backoff_ms(-1)
