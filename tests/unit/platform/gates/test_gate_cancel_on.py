"""Cancel on: the match expression and which events may cancel a run."""

from __future__ import annotations

import pytest
from weir.platform.gates import cancel_on
from weir.platform.gates.cancel_on import CancelWindow, CandidateEvent
from weir.platform.gates.decisions import MS_PER_DAY

NOON = 1_767_268_800_000


def test_match_becomes_an_equality_between_trigger_and_candidate() -> None:
    assert cancel_on.match_expression("data.user_id") == "event.data.user_id == async.data.user_id"
    assert cancel_on.expression("data.x", None) == "event.data.x == async.data.x"


def test_match_and_if_must_both_hold() -> None:
    got = cancel_on.expression("data.x", "async.data.reason == 'refund'")
    assert got == "(event.data.x == async.data.x) && (async.data.reason == 'refund')"


def test_if_alone_and_neither() -> None:
    assert cancel_on.expression(None, " async.data.a > 1 ") == "async.data.a > 1"
    assert cancel_on.expression(None, None) is None
    assert cancel_on.expression("", "  ") is None


@pytest.mark.parametrize("bad", ["data..x", "data.x == 1", ".data", "data.x)", "1data"])
def test_bad_match_paths_are_rejected(bad: str) -> None:
    with pytest.raises(ValueError, match=r"cancel_on\.match"):
        cancel_on.match_expression(bad)


def window(timeout_ms: int | None = None) -> CancelWindow:
    return CancelWindow("run-1", ("trigger",), NOON, cancel_on.expires_at_ms(NOON, timeout_ms))


def test_only_events_received_after_creation_cancel() -> None:
    w = window()
    assert not cancel_on.may_cancel(w, CandidateEvent("e", NOON - 1))
    assert not cancel_on.may_cancel(w, CandidateEvent("e", NOON))
    assert cancel_on.may_cancel(w, CandidateEvent("e", NOON + 1))


def test_never_its_own_trigger() -> None:
    assert not cancel_on.may_cancel(window(), CandidateEvent("trigger", NOON + 5_000))


def test_timeout_bounds_the_window_inclusively() -> None:
    w = window(timeout_ms=60_000)
    assert cancel_on.may_cancel(w, CandidateEvent("e", NOON + 60_000))
    assert not cancel_on.may_cancel(w, CandidateEvent("e", NOON + 60_001))


def test_default_expiry_is_a_year() -> None:
    assert cancel_on.expires_at_ms(NOON, None) == NOON + 365 * MS_PER_DAY


def test_entry_count_bounds() -> None:
    assert cancel_on.check_entry_count(5) == 5
    with pytest.raises(ValueError, match=r"cancel_on entries = 6 .*allowed: 0..5"):
        cancel_on.check_entry_count(6)


def test_negative_timeout_rejected() -> None:
    with pytest.raises(ValueError, match=r"cancel_on.timeout \(ms\) = -1"):
        cancel_on.expires_at_ms(NOON, -1)
