"""The tests' own port source (tests/support/ports.py): no two test processes share a port."""

import socket

import pytest

from tests.support import ports


def test_a_block_held_by_one_process_is_not_given_to_another() -> None:
    first = ports.claim_block(32_768)
    second = ports.claim_block(32_768)
    assert first is not None and second is not None
    try:
        assert first[1] != second[1]  # each lock holder stands for another process
        assert all(
            start >= ports.FIRST and start + ports.BLOCK <= 32_768 for _, start in (first, second)
        )
    finally:
        first[0].close()
        second[0].close()


def test_no_block_fits_below_a_low_ephemeral_range() -> None:
    assert ports.claim_block(ports.FIRST + ports.BLOCK - 1) is None


def test_ports_are_drawn_in_turn_and_a_held_one_is_passed_over(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    claimed = ports.claim_block(32_768)
    assert claimed is not None
    handle, start = claimed
    try:
        monkeypatch.setattr(ports, "_block", lambda: start)
        monkeypatch.setattr(ports, "_drawn", iter(range(10**6)))
        with socket.socket() as holder:
            holder.bind(("127.0.0.1", start))
            assert [ports.free_port() for _ in range(3)] == [start + 1, start + 2, start + 3]
    finally:
        handle.close()
