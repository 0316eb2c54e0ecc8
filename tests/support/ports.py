"""Ports for the servers the tests start.

A port the kernel hands out (bind to port 0) is free only at that moment: until the test's
server binds it, another test worker may be handed the same one, or an outgoing connection
may take it, and the server then fails to start (or, worse, the test talks to another
worker's server already there). So each pytest-xdist worker draws ports in turn from a block
of its own, below the kernel's ephemeral range, skipping any port something else holds.
"""

import itertools
import os
import socket

FIRST = 20_000  # Linux hands out ephemeral ports from 32768 up
BLOCK = 1_000  # ports per worker: far more servers than one worker starts in a run
_drawn = itertools.count()


def free_port() -> int:
    """A port on 127.0.0.1 that no other worker of this test run will be given."""
    slot = _worker_slot()
    if FIRST + (slot + 1) * BLOCK > 32_768:  # more workers than blocks: the kernel's choice
        return _kernel_port()
    for _ in range(BLOCK):
        port = FIRST + slot * BLOCK + next(_drawn) % BLOCK
        if _bindable(port):
            return port
    raise RuntimeError(f"no free port in {FIRST + slot * BLOCK}..+{BLOCK}")


def _worker_slot() -> int:
    """0 when the tests run in one process; 1 + N for xdist's worker gwN."""
    name = os.environ.get("PYTEST_XDIST_WORKER", "")
    return int(name[2:]) + 1 if name.startswith("gw") and name[2:].isdigit() else 0


def _bindable(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def _kernel_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
