"""Singleton: one active run per key; skip names the holder, cancel replaces it."""

from __future__ import annotations

import pytest
from weir.platform.gates import singleton


@pytest.mark.parametrize("mode", ["skip", "cancel"])
def test_free_key_proceeds(mode: singleton.Mode) -> None:
    assert singleton.decide(mode, None, "k") == singleton.SingletonDecision("proceed", None, None)


def test_skip_mode_names_the_holder() -> None:
    decision = singleton.decide("skip", "run-1", "user-7")
    assert decision.action == "skip"
    assert decision.holder_run_id == "run-1"
    assert decision.skip is not None
    assert decision.skip.holder_run_id == "run-1"
    assert decision.skip.words == "singleton: run run-1 is already active (key 'user-7')"


def test_cancel_mode_cancels_the_holder_and_proceeds() -> None:
    decision = singleton.decide("cancel", "run-1")
    assert decision == singleton.SingletonDecision("cancel_holder", "run-1", None)


def test_unknown_mode_is_rejected_clearly() -> None:
    with pytest.raises(ValueError, match=r"singleton.mode = 'queue' .*allowed: skip, cancel"):
        singleton.parse_mode("queue")
    with pytest.raises(ValueError, match=r"singleton\.mode"):
        singleton.decide("queue", None)  # type: ignore[arg-type]


def test_parse_mode_accepts_both_modes() -> None:
    assert singleton.parse_mode("skip") == "skip"
    assert singleton.parse_mode("cancel") == "cancel"
