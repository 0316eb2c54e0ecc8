"""Slow and greedy clients can't take `weir dev` offline (the real server on loopback, raw
sockets): half-open and trickling connections are dropped at their header deadline or to make
room, so /health/live keeps answering even with the file-descriptor limit low; concurrent
uploads past the body budget are refused at once (503 + Retry-After) and the server's peak
memory stays bounded."""

import contextlib
import math
import os
import resource
import select
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect as ws_connect
from websockets.typing import Subprotocol

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


# -- probes: /health/live and event ingest measured while an attack runs ----------------------


@dataclass
class Probed:
    """What legitimate clients saw while an attack ran: each /health/live answer's latency
    (inf: no 200 within PROBE_TIMEOUT_S), each event post's status, the ids accepted."""

    health_s: list[float]
    event_statuses: list[int]
    ids: list[str]


PROBE_TIMEOUT_S = 5.0
HEALTH_BOUND_S = 2.0  # generous on a loaded 2-core machine: the attacks stalled it 13-35 s


def probe_while(url: str, attack: Callable[[], object], rounds: int = 15) -> Probed:
    """`rounds` health checks and event posts, 0.2 s apart, while `attack` runs in a thread."""
    thread = threading.Thread(target=attack, daemon=True)
    thread.start()
    time.sleep(0.5)  # the attack under way
    probed = Probed([], [], [])
    with httpx.Client(timeout=PROBE_TIMEOUT_S) as client:
        for i in range(rounds):
            started = time.monotonic()
            try:
                ok = client.get(f"{url}/health/live").status_code == 200
            except httpx.HTTPError:
                ok = False
            probed.health_s.append(time.monotonic() - started if ok else math.inf)
            try:
                resp = client.post(f"{url}/e/dev", json={"name": "probe/tick", "data": {"i": i}})
                probed.event_statuses.append(resp.status_code)
                probed.ids += resp.json().get("ids", []) if resp.status_code == 200 else []
            except httpx.HTTPError:
                probed.event_statuses.append(0)
            time.sleep(0.2)
    thread.join(timeout=30)
    return probed


def assert_served(url: str, probed: Probed) -> None:
    """Health answered within the bound throughout, every event was accepted and is stored."""
    slow = [round(s, 2) for s in probed.health_s if s > HEALTH_BOUND_S]
    assert not slow, f"/health/live took {slow} s while under attack"
    assert probed.event_statuses == [200] * len(probed.event_statuses), probed.event_statuses
    for event_id in probed.ids:  # nothing accepted was lost
        assert httpx.get(f"{url}/v1/events/{event_id}", timeout=10).status_code == 200


CONNECT_PROTOCOL = "v0.connect.inngest.com"
TINY_FIELDS = b"\x08\x01"  # protobuf field 1, varint 1: the costliest bytes to decode


def _session_path(url: str) -> str:
    """A fresh Connect session's gateway path (with its query), as a worker would use it."""
    from inngest.connect._internal import connect_pb2 as pb

    resp = httpx.post(
        f"{url}/v0/connect/start",
        content=pb.StartRequest().SerializeToString(),
        headers={"content-type": "application/protobuf"},
    )
    assert resp.status_code == 200, resp.text
    started = pb.StartResponse()
    started.ParseFromString(resp.content)
    parts = urlsplit(started.gateway_endpoint)
    return parts.path + (f"?{parts.query}" if parts.query else "")


def _send_frame(port: int, path: str, frame: bytes, outcome: list[str]) -> None:
    """Open the gateway socket and send one binary frame; note how it ended."""
    try:
        with ws_connect(
            f"ws://127.0.0.1:{port}{path}",
            subprotocols=[Subprotocol(CONNECT_PROTOCOL)],
            compression=None,
            open_timeout=10,
            close_timeout=2,
        ) as ws:
            ws.recv(timeout=10)  # GATEWAY_HELLO
            ws.send(frame)
            ws.recv(timeout=30)
    except InvalidStatus as exc:
        outcome.append(f"refused {exc.response.status_code}")
    except ConnectionClosed as exc:
        outcome.append(f"closed {exc.rcvd.code if exc.rcvd else None}")
    except (OSError, TimeoutError) as exc:
        outcome.append(f"error {exc!r}")


@pytest.mark.parametrize(
    ("with_session", "size", "ends"),
    [
        (False, 14 * MiB, {"refused 401"}),  # no session: no socket, not a byte of frame read
        # past the frame cap: refused by its length alone; the close frame may be lost when
        # Weir drops the socket while the sender is still writing (a reset): still refused
        (True, 14 * MiB, {"closed 1009", "closed None"}),
        (True, 7 * MiB, {"closed 1002"}),  # under it: the decoder's field budget stops it
    ],
)
def test_a_huge_websocket_frame_does_not_stall_weir(
    tmp_path: Path, with_session: bool, size: int, ends: set[str]
) -> None:
    server = LimitedWeir(tmp_path, None)
    with running(server):
        before = server.peak_rss()
        path = _session_path(server.url) if with_session else "/v0/connect/gateway"
        frame = TINY_FIELDS * (size // len(TINY_FIELDS))
        outcome: list[str] = []
        probed = probe_while(server.url, lambda: _send_frame(server.port, path, frame, outcome))
        growth = server.peak_rss() - before
        assert_served(server.url, probed)
    assert len(outcome) == 1 and outcome[0] in ends, outcome
    assert growth < 160 * MiB, f"peak memory grew by {growth / MiB:.0f} MiB"


def test_a_foreign_page_cannot_open_the_gateway(tmp_path: Path) -> None:
    """The Host and Origin rules of HTTP requests hold for the WebSocket upgrade too."""
    server = LimitedWeir(tmp_path, None)
    with running(server):
        path = _session_path(server.url)
        foreign_origin = _upgrade(server.port, path, "127.0.0.1", "http://evil.example")
        rebound_host = _upgrade(server.port, _session_path(server.url), "rebound.example", None)
        own = _upgrade(server.port, _session_path(server.url), "127.0.0.1", None)
    assert foreign_origin == 403
    assert rebound_host == 400
    assert own == 101


def _upgrade(port: int, path: str, host: str, origin: str | None) -> int:
    head = (
        f"GET {path} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\n"
        "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
        f"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: {CONNECT_PROTOCOL}\r\n"
    )
    if origin:
        head += f"Origin: {origin}\r\n"
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall((head + "\r\n").encode())
    status = _status(sock)
    sock.close()
    return status


# serial: beside four workers on two cores, 62 of its 120 upgrades were accepted over the
# test once (alone it holds to 50); why under load is not yet known
@pytest.mark.serial
def test_idle_sockets_and_kept_alive_connections_leave_room_for_health_and_ingest(
    tmp_path: Path,
) -> None:
    server = LimitedWeir(tmp_path, None, max_connections="100")
    with running(server):
        sockets, refused = [], 0
        for _ in range(120):  # idle Connect sockets, more than the whole cap
            try:
                sockets.append(
                    ws_connect(
                        f"ws://127.0.0.1:{server.port}{_session_path(server.url)}",
                        subprotocols=[Subprotocol(CONNECT_PROTOCOL)],
                        open_timeout=5,
                    )
                )
            except (InvalidStatus, OSError, TimeoutError):
                refused += 1
        kept_alive = [httpx.Client(timeout=5) for _ in range(100)]  # one request, then idle
        for client in kept_alive:
            with contextlib.suppress(httpx.HTTPError):
                client.get(f"{server.url}/health/live")
        answers = []
        for i in range(21):  # fresh connections of legitimate clients
            try:
                with httpx.Client(timeout=5) as client:
                    ok = client.get(f"{server.url}/health/live").status_code == 200
                    event = {"name": "t/e", "data": {"i": i}}
                    resp = client.post(f"{server.url}/e/dev", json=event)
                    answers.append(ok and resp.status_code == 200)
            except httpx.HTTPError:
                answers.append(False)
        for sock in sockets:
            with contextlib.suppress(Exception):
                sock.close()
        for client in kept_alive:
            client.close()
    assert answers == [True] * 21
    assert len(sockets) <= 50 and refused >= 70  # WebSockets hold at most half the cap


def _hold_declared_body(
    port: int, path: str, declared: int, seconds: float, out: list[int]
) -> None:
    """Declare a body of `declared` bytes, send a few of them, and hold the connection."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=seconds + 10)
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        "content-type: application/x-www-form-urlencoded\r\n"
        f"content-length: {declared}\r\n\r\nuser=a&password="
    )
    with contextlib.suppress(OSError):
        sock.sendall(head.encode())
        readable, _, _ = select.select([sock], [], [], seconds)
        out.append(_status(sock) if readable else 0)  # 0: held open the whole time
    sock.close()


def test_a_declared_length_does_not_take_the_body_budget(tmp_path: Path) -> None:
    server = LimitedWeir(tmp_path, None, body_budget="64")
    with running(server):
        held: list[int] = []
        probed = probe_while(
            server.url,
            lambda: _hold_declared_body(server.port, "/login", 64 * MiB, 8.0, held),
        )
        assert_served(server.url, probed)
    assert held == [413]  # far past what a login form may be: refused without reading it
