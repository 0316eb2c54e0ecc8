"""Ports for the servers the tests start.

A port the kernel hands out (bind to port 0) is free only at that moment: until the test's
server binds it, another test process may be handed the same one, or an outgoing connection
may take it, and the server then fails to start (or, worse, the test talks to another
process's server already there). So each test process claims a block of ports of its own,
below the kernel's ephemeral range, by holding a lock on the block's file for as long as it
lives (every pytest-xdist worker, every other test run on the machine), and draws its ports
from that block in turn, skipping any that something else holds.
"""

import fcntl
import itertools
import socket
import tempfile
from pathlib import Path
from typing import IO

FIRST = 15_000  # the lowest port of the first block
BLOCK = 500  # ports per process: far more servers than one test process starts
LOCKS = Path(tempfile.gettempdir()) / "weir-test-ports"
_EPHEMERAL = Path("/proc/sys/net/ipv4/ip_local_port_range")

# this process's block: its lock file, open while the process lives, and its first port
_claimed: tuple[IO[str], int] | None = None
_drawn = itertools.count()


def free_port() -> int:
    """A port on 127.0.0.1 that no other test process on this machine will be given."""
    block = _block()
    if block is None:  # every block is taken: the kernel's choice, as before
        return _kernel_port()
    for _ in range(BLOCK):
        port = block + next(_drawn) % BLOCK
        if _bindable(port):
            return port
    raise RuntimeError(f"no free port in {block}..{block + BLOCK - 1}")


def _block() -> int | None:
    """The first port of this process's block, claimed at its first call."""
    global _claimed
    if _claimed is None:
        _claimed = claim_block(_ephemeral_low())
    return None if _claimed is None else _claimed[1]


def claim_block(limit: int) -> tuple[IO[str], int] | None:
    """Lock the first free block below port `limit`: its open lock file and first port."""
    LOCKS.mkdir(exist_ok=True)
    for first in range(FIRST, limit - BLOCK + 1, BLOCK):
        handle = (LOCKS / f"{first}.lock").open("a")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # another live test process has it
            handle.close()
            continue
        return handle, first
    return None


def _ephemeral_low() -> int:
    """Where the kernel's range for outgoing connections starts (32768 unless set lower)."""
    try:
        return int(_EPHEMERAL.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32_768


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
