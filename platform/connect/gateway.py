"""The Connect gateway: the workers connected per app, and the calls in flight over them.

A worker first asks `POST /v0/connect/start` for a session, then opens the WebSocket at the
gateway URL the start gave it, which carries the one-time session token: the upgrade of a
request without a valid one is refused before any frame is read. The worker then sends its
apps' function configs, which sync like an HTTP sync. From then on a call of one
of its functions is a request message; the worker acknowledges it, extends its lease while
the function runs, and replies. A reply is matched by its request id, whichever connection
(or `/v0/connect/flush`) brings it: a worker that reconnects mid-call answers over its new
socket, so a dropped socket alone never fails or repeats a call — only a lease that stops
being extended does.
"""

import asyncio
import contextlib
import json
import logging
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from weir.platform.connect import wire
from weir.platform.connect.wire import Kind, Message
from weir.platform.foundation.record_type import record
from weir.platform.functions import CONNECT_URL, SyncError

log = logging.getLogger("weir.connect")

HEARTBEAT_S = 10  # the worker's heartbeat interval, told it at READY
EXTEND_LEASE_S = 5  # how often the worker extends the lease of a call it is running
LEASE_S = 4 * EXTEND_LEASE_S  # a call whose lease is not extended for this long is lost
MISSED_HEARTBEATS = 3  # a connection silent this many heartbeats is dead
HANDSHAKE_S = 10.0  # from the socket opening to the worker's apps
ACK_S = 10.0  # from sending a request to the worker acknowledging it
SESSION_S = 60.0  # a session token from /v0/connect/start must be used this soon
MAX_SESSIONS = 10_000  # unused sessions kept at most: a flood of starts cannot fill memory
WORKER_WAIT_S = 15.0  # a call waits this long for a worker (the SDK reconnects within 5 s)
PROTOCOL = "v0.connect.inngest.com"  # the WebSocket subprotocol the SDK asks for
SESSION_PARAM = "session"  # the gateway URL's query parameter carrying the session token
REFUSAL_LOG_S = 60.0  # the same refusal of a worker is logged at most this often

Register = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
Refuse = Callable[[str], str | None]  # why a worker may not serve the app named so, or None


class Socket(Protocol):
    """A WebSocket as the gateway needs it; the API route adapts Starlette's."""

    async def send(self, data: bytes) -> None: ...
    async def receive(self) -> bytes:
        """The next binary message; SocketClosed once the peer is gone."""
        ...

    async def close(self, code: int, reason: str) -> None: ...


class SocketClosed(Exception):
    pass


@record
class Claimed:
    """A session spent on opening one socket: its token and connection id."""

    token: str
    connection_id: str


class NoAnswer(Exception):
    """A call got no reply: no worker had room for it, or its lease ran out."""


@record
class Target:
    """The function a call is for, and its identity on the wire."""

    app_id: str
    function_id: str
    function_slug: str
    step_id: str
    run_id: str
    job_id: str


@dataclass(eq=False)
class Conn:
    """One connected worker: the apps it serves (app id -> app name) and its calls."""

    id: str
    instance_id: str
    socket: Socket
    apps: dict[str, str]
    max_calls: int | None
    draining: bool = False
    calls: int = 0
    closed: asyncio.Event = field(default_factory=asyncio.Event)
    _sending: asyncio.Lock = field(default_factory=asyncio.Lock)

    async def send(self, kind: Kind, payload: bytes = b"") -> None:
        async with self._sending:  # one frame at a time on the socket
            await self.socket.send(Message(kind, payload).encode())

    def has_room(self) -> bool:
        return not self.draining and (self.max_calls is None or self.calls < self.max_calls)


@dataclass(eq=False)
class Pending:
    target: Target
    conn: Conn
    lease_id: str
    lease_until: float
    acked: asyncio.Event = field(default_factory=asyncio.Event)
    reply: "asyncio.Future[wire.Reply]" = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


class Gateway:
    def __init__(self, register: Register, refuse: Refuse = lambda name: None) -> None:
        self.register, self.refuse = register, refuse
        self.conns: list[Conn] = []
        self.pending: dict[str, Pending] = {}
        self._sessions: dict[str, tuple[str, float]] = {}  # token -> (connection id, expiry)
        self._refusals: dict[str, float] = {}  # a refusal's text -> when it was last logged
        self._changed = asyncio.Event()  # set (and replaced) when a worker may have room
        self._closing = False

    # -- sessions (POST /v0/connect/start) -----------------------------------------------------
    def start_session(self, gateway_endpoint: str) -> wire.StartResponse:
        now = _now()
        self._sessions = {t: s for t, s in self._sessions.items() if s[1] > now}
        while len(self._sessions) >= MAX_SESSIONS:  # the oldest unused one goes first
            self._sessions.pop(next(iter(self._sessions)))
        connection_id, token = secrets.token_hex(16), secrets.token_urlsafe(32)
        self._sessions[token] = (connection_id, now + SESSION_S)
        endpoint = f"{gateway_endpoint}?{SESSION_PARAM}={token}"
        return wire.StartResponse(connection_id, endpoint, "weir", token, token)

    def claim(self, token: str) -> Claimed | None:
        """The session a socket's upgrade names, spent; None if unknown, used or expired."""
        session = self._sessions.pop(token, None)
        if session is None or session[1] <= _now():
            return None
        return Claimed(token, session[0])

    # -- one worker's socket -------------------------------------------------------------------
    async def serve(self, socket: Socket, claimed: Claimed) -> None:
        """The life of one connection (opened with the session `claimed`): handshake, then
        its messages until it closes."""
        if self._closing:
            await socket.close(1012, "Weir is shutting down; connect again shortly")
            return
        conn: Conn | None = None
        try:
            conn = await self._handshake(socket, claimed)
            if conn is None:
                return
            await self._listen(conn)
        except SocketClosed:
            pass
        finally:
            if conn is not None:
                self._drop(conn)

    async def _handshake(self, socket: Socket, claimed: Claimed) -> Conn | None:
        await socket.send(Message(Kind.GATEWAY_HELLO).encode())
        try:
            first = Message.decode(await asyncio.wait_for(socket.receive(), HANDSHAKE_S))
            if first.kind != Kind.WORKER_CONNECT:
                raise wire.WireError(f"expected WORKER_CONNECT, got message kind {first.kind}")
            hello = wire.WorkerConnect.decode(first.payload)
        except TimeoutError:
            await socket.close(1008, f"no WORKER_CONNECT within {HANDSHAKE_S:.0f} s")
            return None
        except wire.WireError as exc:
            await socket.close(1002, _reason(f"bad handshake: {exc}"))
            return None
        if (hello.session_token, hello.connection_id) != (claimed.token, claimed.connection_id):
            await socket.close(1008, "WORKER_CONNECT names another session than the socket's")
            return None
        apps = await self._sync(socket, hello)
        if apps is None:
            return None
        conn = Conn(hello.connection_id, hello.instance_id, socket, apps, _cap(hello))
        ready = wire.ConnectionReady(HEARTBEAT_S, EXTEND_LEASE_S)
        await conn.send(Kind.GATEWAY_CONNECTION_READY, ready.encode())
        self.conns.append(conn)
        self._notify()
        log.info(
            "Connect worker %s (%s) connected for %s",
            conn.id,
            conn.instance_id,
            ", ".join(apps.values()),
        )
        return conn

    async def _sync(self, socket: Socket, hello: wire.WorkerConnect) -> dict[str, str] | None:
        """Sync each app the worker serves, as an HTTP sync would; app id -> app name."""
        refusals = [r for app in hello.apps if (r := self.refuse(app.app_name)) is not None]
        if refusals:  # before any sync: a worker refused one of its apps registers none
            await self._refused(socket, "; ".join(refusals), "; ".join(refusals))
            return None
        apps: dict[str, str] = {}
        for app in hello.apps:
            try:
                payload = _sync_payload(hello, app)
                result = await self.register(payload)
            except (ValueError, SyncError) as exc:
                await self._refused(socket, f"sync of app {app.app_name!r} failed: {exc}", str(exc))
                return None
            apps[str(result["app_id"])] = app.app_name
        return apps

    async def _refused(self, socket: Socket, said: str, sync_failed: str) -> None:
        """Refuse the worker: SYNC_FAILED with the whole error, then a close with its start.
        A refused worker reconnects every second or so: the same refusal is logged once a
        minute (REFUSAL_LOG_S), not at each attempt."""
        now = _now()
        if now - self._refusals.get(said, -REFUSAL_LOG_S) >= REFUSAL_LOG_S:
            if len(self._refusals) >= MAX_SESSIONS:
                self._refusals.clear()
            self._refusals[said] = now
            log.warning("refused a Connect worker (logged once a minute): %s", said)
        with contextlib.suppress(SocketClosed):
            await socket.send(Message(Kind.SYNC_FAILED, sync_failed.encode()).encode())
        await socket.close(1008, _reason(said))

    async def _listen(self, conn: Conn) -> None:
        silence = HEARTBEAT_S * MISSED_HEARTBEATS
        while True:
            try:
                data = await asyncio.wait_for(conn.socket.receive(), silence)
            except TimeoutError:
                log.warning("Connect worker %s sent nothing for %d s: closing it", conn.id, silence)
                await conn.socket.close(1011, f"no heartbeat for {silence} s")
                return
            try:
                await self._handle(conn, Message.decode(data))
            except wire.WireError as exc:
                log.warning("Connect worker %s sent a bad message: %s", conn.id, exc)

    async def _handle(self, conn: Conn, msg: Message) -> None:
        if msg.kind == Kind.WORKER_HEARTBEAT:
            await conn.send(Kind.GATEWAY_HEARTBEAT)
        elif msg.kind == Kind.WORKER_PAUSE:  # shutting down: no new calls, running ones finish
            conn.draining = True
        elif msg.kind == Kind.WORKER_REQUEST_ACK:
            pending = self._call_of(conn, wire.RequestAck.decode(msg.payload).request_id)
            if pending is not None:
                pending.acked.set()
        elif msg.kind == Kind.WORKER_REQUEST_EXTEND_LEASE:
            await conn.send(Kind.WORKER_REQUEST_EXTEND_LEASE_ACK, self._extend(conn, msg.payload))
        elif msg.kind == Kind.WORKER_REPLY:
            reply = wire.Reply.decode(msg.payload)
            if self._call_of(conn, reply.request_id) is not None:
                self.take_reply(reply)
            # acked even when no call waits for it (it ended meanwhile): nothing else will
            await conn.send(Kind.WORKER_REPLY_ACK, wire.ReplyAck(reply.request_id).encode())

    def _call_of(self, conn: Conn, request_id: str) -> Pending | None:
        """The call `request_id` if it is of an app `conn` serves: a worker's messages act
        only on its own apps' calls (a reconnected worker of the app answers the same call)."""
        pending = self.pending.get(request_id)
        return pending if pending is not None and pending.target.app_id in conn.apps else None

    def _extend(self, conn: Conn, payload: bytes) -> bytes:
        """A new lease for a call still waiting, or none: the worker then drops the call."""
        asked = wire.ExtendLease.decode(payload)
        pending = self._call_of(conn, asked.request_id)
        new: str | None = None
        if pending is not None and pending.lease_id == asked.lease_id:
            pending.lease_id, pending.lease_until = secrets.token_hex(8), _now() + LEASE_S
            new = pending.lease_id
        app_id = pending.target.app_id if pending else ""
        slug = pending.target.function_slug if pending else ""
        return wire.ExtendLeaseAck(asked.request_id, app_id, slug, new).encode()

    def take_reply(self, reply: wire.Reply) -> bool:
        """Hand a reply to the call waiting for it (over any socket, or flushed over HTTP)."""
        pending = self.pending.get(reply.request_id)
        if pending is None or pending.reply.done():
            return False
        pending.reply.set_result(reply)
        return True

    def _drop(self, conn: Conn) -> None:
        conn.closed.set()
        if conn in self.conns:
            self.conns.remove(conn)
            log.info("Connect worker %s disconnected", conn.id)

    def workers_of(self, app_id: str) -> int:
        """The workers connected for the app (the Apps page shows it)."""
        return sum(1 for c in self.conns if app_id in c.apps)

    # -- calls ---------------------------------------------------------------------------------
    async def call(self, target: Target, body: bytes, timeout_s: float) -> wire.Reply:
        """Send the call to a worker of its app and wait for the reply; NoAnswer if none comes."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while True:
            conn = await self._pick(target.app_id, min(deadline, loop.time() + WORKER_WAIT_S))
            request_id = secrets.token_hex(16)
            pending = Pending(target, conn, secrets.token_hex(8), _now() + LEASE_S)
            self.pending[request_id] = pending
            conn.calls += 1
            try:
                if await self._dispatch(request_id, pending, body):
                    return await self._reply(pending, deadline)
            finally:
                self.pending.pop(request_id, None)
                conn.calls -= 1
                self._notify()
            # the socket closed before the worker had the request: it never ran; another try

    async def _pick(self, app_id: str, until: float) -> Conn:
        loop = asyncio.get_running_loop()
        while True:
            ready = [c for c in self.conns if app_id in c.apps and c.has_room()]
            if ready:
                return min(ready, key=lambda c: c.calls)
            left = until - loop.time()
            if left <= 0 or self._closing:
                serving = [c for c in self.conns if app_id in c.apps]
                raise NoAnswer(
                    f"no Connect worker of this app had room within {WORKER_WAIT_S:.0f} s "
                    f"({len(serving)} connected, all paused or at their concurrency limit)"
                    if serving
                    else "no Connect worker of this app is connected: start one "
                    "(inngest.connect) pointed at this Weir"
                )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), left)

    async def _dispatch(self, request_id: str, pending: Pending, body: bytes) -> bool:
        """Send the request; True once the worker has it, False if it never got it (its
        socket closed first, or it acknowledged nothing): the call then goes elsewhere."""
        t = pending.target
        request = wire.ExecutorRequest(
            request_id=request_id,
            app_id=t.app_id,
            app_name=pending.conn.apps[t.app_id],
            function_id=t.function_id,
            function_slug=t.function_slug,
            step_id=t.step_id,
            request_payload=body,
            run_id=t.run_id,
            lease_id=pending.lease_id,
            job_id=t.job_id,
        )
        try:
            await pending.conn.send(Kind.GATEWAY_EXECUTOR_REQUEST, request.encode())
        except SocketClosed:
            self._drop(pending.conn)  # gone before its reader noticed: no new call picks it
            return False
        waits = [pending.acked.wait(), pending.conn.closed.wait()]
        tasks = [asyncio.ensure_future(w) for w in waits] + [asyncio.ensure_future(pending.reply)]
        try:
            await asyncio.wait(tasks, timeout=ACK_S, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in tasks[:2]:
                task.cancel()
        if pending.acked.is_set() or pending.reply.done():
            return True
        if not pending.conn.closed.is_set():
            # a socket that takes calls but acknowledges none is dead without knowing it: it
            # is closed (calls it acknowledged before live on by their leases) and the call,
            # never begun, goes to another worker
            log.warning("Connect worker %s acknowledged nothing in %.0f s", pending.conn.id, ACK_S)
            self._drop(pending.conn)
            with contextlib.suppress(SocketClosed):
                await pending.conn.socket.close(1011, f"no acknowledgement within {ACK_S:.0f} s")
        return False

    async def _reply(self, pending: Pending, deadline: float) -> wire.Reply:
        loop = asyncio.get_running_loop()
        while True:
            lease_left = pending.lease_until - _now()
            if lease_left <= 0:
                raise NoAnswer(
                    f"the Connect worker stopped extending the call's lease (nothing for "
                    f"{LEASE_S} s): it is gone or stuck"
                )
            left = deadline - loop.time()
            if left <= 0:
                raise NoAnswer("the call timed out (--app-timeout) before the worker replied")
            with contextlib.suppress(TimeoutError):
                return await asyncio.wait_for(asyncio.shield(pending.reply), min(lease_left, left))

    def _notify(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    # -- shutdown ------------------------------------------------------------------------------
    async def close(self) -> None:
        """Tell every worker to reconnect (to this Weir once it is back, or another one)."""
        self._closing = True
        self._notify()
        for conn in list(self.conns):
            with contextlib.suppress(SocketClosed):
                await conn.send(Kind.GATEWAY_CLOSING)
            with contextlib.suppress(SocketClosed):
                await conn.socket.close(1001, "Weir is shutting down")


def _sync_payload(hello: wire.WorkerConnect, app: wire.AppConfiguration) -> dict[str, Any]:
    """The HTTP sync body the worker's apps would have posted to /fn/register."""
    try:
        functions = json.loads(app.functions) if app.functions else []
    except ValueError as exc:
        raise ValueError(f"its function configs are not JSON: {exc}") from exc
    payload: dict[str, Any] = {
        "appname": app.app_name,
        "url": CONNECT_URL,
        "framework": hello.framework or "connect",
        "sdk": f"{hello.sdk_language or 'unknown'}:v{hello.sdk_version or '0'}",
        "functions": functions,
    }
    if app.app_version:
        payload["appVersion"] = app.app_version
    return payload


def _reason(text: str) -> str:
    """A close reason fits 123 bytes of UTF-8 (RFC 6455); longer ones are cut, whole chars."""
    return text.encode()[:123].decode(errors="ignore")


def _cap(hello: wire.WorkerConnect) -> int | None:
    cap = hello.max_worker_concurrency
    return cap if cap is not None and cap > 0 else None


def _now() -> float:
    return asyncio.get_running_loop().time()
