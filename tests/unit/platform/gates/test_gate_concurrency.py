"""Concurrency: fits every limit, 0 = unlimited, and which key blocks."""

from __future__ import annotations

import pytest
from weir.platform.gates import concurrency
from weir.platform.gates.concurrency import Slot


def test_no_limits_always_fit() -> None:
    assert concurrency.check([]) == concurrency.ConcurrencyDecision(True, (), None)


def test_fits_while_every_limit_has_room() -> None:
    decision = concurrency.check([Slot(3, 2, "a"), Slot(10, 9, "b", "env")])
    assert decision.fits
    assert decision.blocking == ()
    assert decision.wait is None


def test_zero_means_unlimited() -> None:
    assert concurrency.check([Slot(0, 10_000)]).fits


def test_full_limit_blocks_and_is_named() -> None:
    full = Slot(2, 2, "openai", "account")
    decision = concurrency.check([Slot(5, 1, "user-1"), full])
    assert not decision.fits
    assert decision.blocking == (full,)
    assert decision.wait is not None
    assert decision.wait.gate == "concurrency"
    assert decision.wait.key == "openai"
    assert decision.wait.until_ms is None
    assert decision.wait.words == (
        "concurrency: waiting for a free slot; account limit 2 full (2 running) (key 'openai')"
    )


def test_both_limits_full_are_both_named_in_order() -> None:
    first, second = Slot(1, 1), Slot(4, 5, "k")
    decision = concurrency.check([first, second])
    assert decision.blocking == (first, second)
    assert decision.wait is not None
    assert decision.wait.words == (
        "concurrency: waiting for a free slot; fn limit 1 full (1 running); "
        "fn limit 4 full (5 running) (key 'k')"
    )


def test_more_than_two_limits_is_an_error() -> None:
    with pytest.raises(ValueError, match="3 limits given; allowed: at most 2"):
        concurrency.check([Slot(1, 0), Slot(1, 0), Slot(1, 0)])


@pytest.mark.parametrize(
    ("limit", "in_use", "message"),
    [(-1, 0, r"concurrency.limit = -1 .*>= 0"), (1, -2, r"concurrency in_use = -2 .*>= 0")],
)
def test_bad_values_raise(limit: int, in_use: int, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Slot(limit, in_use)
