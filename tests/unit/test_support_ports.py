"""The tests' own port source (tests/support/ports.py): workers never share a port."""

import socket

import pytest

from tests.support import ports


def test_each_worker_draws_from_its_own_block(monkeypatch: pytest.MonkeyPatch) -> None:
    drawn: dict[str, set[int]] = {}
    for worker in ("", "gw0", "gw3"):
        monkeypatch.setenv("PYTEST_XDIST_WORKER", worker)
        drawn[worker] = {ports.free_port() for _ in range(20)}
        assert len(drawn[worker]) == 20  # never the same port twice in a row of draws
        assert all(ports.FIRST <= p < 32_768 for p in drawn[worker])  # below the ephemeral range
    assert not drawn[""] & drawn["gw0"] and not drawn["gw0"] & drawn["gw3"]


def test_a_port_something_holds_is_passed_over(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw10")  # a block no worker of a run uses
    monkeypatch.setattr(ports, "_drawn", iter(range(10**6)))
    first = ports.FIRST + 11 * ports.BLOCK
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", first))
        assert ports.free_port() == first + 1
