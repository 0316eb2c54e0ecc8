"""Slow and greedy clients can't take `weir dev` offline (the real server on loopback, raw
sockets): half-open and trickling connections are dropped at their header deadline or to make
room, so /health/live keeps answering even with the file-descriptor limit low; concurrent
uploads past the body budget are refused at once (503 + Retry-After) and the server's peak
memory stays bounded."""

import contextlib
import os
import resource
import select
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.integration.harness import ROOT, STARTUP_S, WeirServer

MiB = 1024 * 1024


class LimitedWeir(WeirServer):
    """`weir dev` with a low open-file limit (hard as well: it cannot raise it) and the
    connection settings given as WEIR_* variables."""

    def __init__(self, tmp: Path, nofile: int | None, **env: str) -> None:
        super().__init__(tmp)
        self.nofile = nofile
        self.env = self.env | {f"WEIR_{k.upper()}": v for k, v in env.items()}

    def start(self) -> None:
        out = self.log.open("ab")
        limit = self.nofile

        def lower_limit() -> None:
            if limit is not None:
                resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))

        self.proc = subprocess.Popen(
            self.args, env=self.env, cwd=ROOT, stdout=out, stderr=out, preexec_fn=lower_limit
        )
        deadline = time.monotonic() + STARTUP_S
        while time.monotonic() < deadline:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{self.url}/health/live").status_code == 200:
                    return
            time.sleep(0.05)
        raise AssertionError("weir did not start")

    def peak_rss(self) -> int:
        assert self.proc is not None
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
        raise AssertionError("no VmHWM")


@contextlib.contextmanager
def running(server: LimitedWeir) -> Iterator[LimitedWeir]:
    server.start()
    try:
        yield server
    finally:
        server.stop()


def connect(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    sock.setblocking(False)
    return sock


def closed_by_server(sock: socket.socket) -> bool:
    try:
        data = sock.recv(4096)
    except BlockingIOError:
        return False
    except OSError:
        return True
    return data == b"" or data.startswith(b"HTTP/1.1 408")


def live(url: str) -> bool:
    try:
        return httpx.get(f"{url}/health/live", timeout=3).status_code == 200
    except httpx.HTTPError:
        return False


def test_half_open_connections_do_not_keep_health_out(tmp_path: Path) -> None:
    server = LimitedWeir(tmp_path, 300, max_connections="100", header_timeout="2", workers="16")
    with running(server):
        socks = [connect(server.port) for _ in range(400)]  # more than the server has files
        for sock in socks[::2]:  # half started a request, the rest sent nothing at all
            sock.send(b"POST /e/dev HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        time.sleep(0.5)
        answers = [live(server.url) for _ in range(3)]
        deadline = time.monotonic() + 8  # the header deadline (2 s) and some slack
        still_open = set(socks)
        while still_open and time.monotonic() < deadline:
            readable, _, _ = select.select(list(still_open), [], [], 0.5)
            still_open -= {s for s in readable if closed_by_server(s)}
        for sock in socks:
            sock.close()
        assert answers == [True, True, True]
        assert not still_open, f"{len(still_open)} half-open connections were never dropped"


def test_a_trickled_request_is_cut_off_at_the_header_deadline(tmp_path: Path) -> None:
    server = LimitedWeir(tmp_path, None, header_timeout="1")
    with running(server):
        sock = connect(server.port)
        started = time.monotonic()
        cut = False
        for byte in b"GET /health/live HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 40:
            try:
                sock.send(bytes([byte]))
            except OSError:
                cut = True
                break
            if closed_by_server(sock):
                cut = True
                break
            time.sleep(0.2)
        elapsed = time.monotonic() - started
        sock.close()
        assert cut and elapsed < 4, f"still connected after {elapsed:.1f}s"
        assert live(server.url)


def test_concurrent_uploads_past_the_budget_are_refused_and_memory_stays_bounded(
    tmp_path: Path,
) -> None:
    server = LimitedWeir(tmp_path, None, body_budget="8")
    size, count = 3 * MiB, 30  # 90 MiB in all against a budget of 8
    with running(server):
        assert httpx.post(f"{server.url}/e/dev", json={"name": "t/warm"}).status_code == 200
        before = server.peak_rss()
        head = (
            f"POST /fn/register HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-type: application/json"
            f"\r\ncontent-length: {size}\r\n\r\n"
        ).encode()
        socks = [
            socket.create_connection(("127.0.0.1", server.port), timeout=10) for _ in range(count)
        ]
        chunk = b" " * (size - 1)
        for sock in socks:  # every body all but complete, so the server holds them at once
            with contextlib.suppress(OSError):
                sock.sendall(head + chunk)
        time.sleep(1)
        for sock in socks:
            with contextlib.suppress(OSError):
                sock.sendall(b" ")
        statuses = [_status(sock) for sock in socks]
        growth = server.peak_rss() - before
        for sock in socks:
            sock.close()
        assert live(server.url)
        chunked = _chunked_upload(server.port, 10 * MiB)  # never fits: not worth a retry
    assert statuses.count(503) >= count - 3, statuses
    assert chunked == 413
    assert growth < 48 * MiB, f"peak memory grew by {growth / MiB:.0f} MiB"


def _chunked_upload(port: int, total: int, size: int = 64 * 1024) -> int:
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    head = (
        "POST /fn/register HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-type: application/json\r\n"
        "transfer-encoding: chunked\r\n\r\n"
    )
    with contextlib.suppress(OSError):
        sock.sendall(head.encode())
        for _ in range(total // size):
            sock.sendall(b"%x\r\n" % size + b" " * size + b"\r\n")
        sock.sendall(b"0\r\n\r\n")
    status = _status(sock)
    sock.close()
    return status


def _status(sock: socket.socket) -> int:
    data = b""
    with contextlib.suppress(OSError):
        while b"\r\n" not in data:
            piece = sock.recv(4096)
            if not piece:
                break
            data += piece
    parts = data.split(b" ", 2)
    return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0


@pytest.fixture(autouse=True)
def _enough_files() -> None:
    """This test process opens a few hundred sockets itself."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 2048 <= hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (2048, hard))
    assert os.name == "posix"
