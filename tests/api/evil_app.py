"""A misbehaving "SDK app" on loopback: a raw asyncio HTTP server (no framework to smooth
anything over) whose answer depends on the path, /<mode>. It reads one request, then answers
with broken JSON, unknown ops, oversized data, a reset connection, a body that never ends...
"""

import asyncio
import contextlib
import functools
import json
import socket
import struct
import time
from collections.abc import Awaitable, Callable
from typing import Any

from weir.platform.executor.signing import sign

from tests.support.stream_server import StreamServer

MIB = 1024 * 1024
Handler = Callable[[asyncio.StreamWriter, dict[str, Any], "EvilApp"], Awaitable[None]]


def head(status: int, length: int, extra: dict[str, str] | None = None) -> bytes:
    headers = {"content-type": "application/json", "x-inngest-sdk": "evil:v0"} | (extra or {})
    lines = [f"HTTP/1.1 {status} X", f"content-length: {length}", "connection: close"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


async def answer(
    w: asyncio.StreamWriter, status: int, value: Any, key: str | None = None, raw: bytes = b""
) -> None:
    body = raw or json.dumps(value).encode()
    extra = {"x-inngest-signature": sign(body, key, int(time.time()))} if key else {}
    w.write(head(status, len(body), extra) + body)
    await w.drain()


def step_run(step_id: str, data: Any) -> dict[str, Any]:
    return {"op": "StepRun", "id": step_id, "name": step_id, "displayName": step_id, "data": data}


def depth(request: dict[str, Any]) -> int:
    """How many steps the run has saved (the stack is sent even when use_api hides them)."""
    return len(request["ctx"]["stack"]["stack"])


async def not_json(w: asyncio.StreamWriter, req: dict[str, Any], app: "EvilApp") -> None:
    await answer(w, 206, None, raw=b"<html>definitely not json")


async def completed_not_json(w: asyncio.StreamWriter, req: dict[str, Any], app: "EvilApp") -> None:
    await answer(w, 200, None, raw=b"{oops")


async def unknown_op(w: asyncio.StreamWriter, req: dict[str, Any], app: "EvilApp") -> None:
    await answer(w, 206, [{"op": "Explode", "id": "a"}])


async def wrong_types(w: asyncio.StreamWriter, req: dict[str, Any], app: "EvilApp") -> None:
    await answer(w, 206, [{"op": "StepRun", "id": 5, "data": 1}])


async def reset(w: asyncio.StreamWriter, req: dict[str, Any], app: "EvilApp") -> None:
    sock = w.get_extra_info("socket")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # RST on close
    w.transport.abort()


async def never_ends(w: asyncio.StreamWriter, req: dict[str, Any], app: "EvilApp") -> None:
    w.write(head(200, 1_000_000) + b'{"a": "')
    await w.drain()
    with contextlib.suppress(ConnectionError):
        for _ in range(600):  # a byte now and then, never the rest
            await asyncio.sleep(0.1)
            w.write(b"x")
            await w.drain()


async def huge_response(w: asyncio.StreamWriter, req: dict[str, Any], app: "EvilApp") -> None:
    w.write(head(206, 9 * MIB))
    with contextlib.suppress(ConnectionError):
        for _ in range(9):
            w.write(b" " * MIB)
            await w.drain()


async def big_step(w: asyncio.StreamWriter, req: dict[str, Any], app: "EvilApp") -> None:
    await answer(w, 206, [step_run("big", "x" * (4 * MIB))])


async def fat_state(w: asyncio.StreamWriter, req: dict[str, Any], app: "EvilApp") -> None:
    n = depth(req)  # each step just under 4 MiB: the ninth passes 32 MiB in all
    await answer(w, 206, [step_run(f"s{n}", "x" * (4 * MIB - 100))])


async def many_steps(w: asyncio.StreamWriter, req: dict[str, Any], app: "EvilApp") -> None:
    n = depth(req)
    if n == 0:  # a thousand steps at once, then one more
        await answer(w, 206, [step_run(f"s{i}", i) for i in range(1000)])
    else:
        await answer(w, 206, [step_run(f"s{n}", n)])


async def huge_int(w: asyncio.StreamWriter, req: dict[str, Any], app: "EvilApp") -> None:
    if depth(req) == 0:
        await answer(w, 206, [step_run("n", 2**60)])
    else:
        await answer(w, 200, "unreachable")


async def good(w: asyncio.StreamWriter, req: dict[str, Any], app: "EvilApp") -> None:
    if depth(req) == 0:
        await answer(w, 206, [step_run("one", 1)], key=app.key)
    else:
        await answer(w, 200, {"ok": True}, key=app.key)


async def unsigned(w: asyncio.StreamWriter, req: dict[str, Any], app: "EvilApp") -> None:
    await answer(w, 200, {"ok": True})


async def wrong_key(w: asyncio.StreamWriter, req: dict[str, Any], app: "EvilApp") -> None:
    await answer(w, 200, {"ok": True}, key="signkey-test-" + "00" * 32)


def op(kind: str, step_id: str, name: str = "", **opts: Any) -> dict[str, Any]:
    return {"op": kind, "id": step_id, "name": name, "displayName": name, "opts": opts}


# Ops whose JSON is fine but whose fields cannot be acted on (each once raised in the
# scheduler, and the call came back at every lease).
BAD_OPS: dict[str, dict[str, Any]] = {
    "bad_sleep_duration": op("Sleep", "s", "nap", duration="forever"),
    "bad_sleep_time": op("Sleep", "s", "20000-01-01T00:00:00Z"),
    "huge_sleep": op("Sleep", "s", "nap", duration="9" * 60 + "w"),
    "bad_wait_timeout": op("WaitForEvent", "w", "evil/later", timeout="1 fortnight"),
    "bad_wait_if": op("WaitForEvent", "w", "evil/later", timeout="1h", **{"if": "event.data =="}),
    "wait_if_nul": op("WaitForEvent", "w", "evil/later", **{"if": "event.data.x == '\x00'"}),
    "bad_wait_event": op("WaitForEvent", "w", "evil/\nforged line", timeout="1h"),
    "invoke_list_payload": op("InvokeFunction", "i", "call", function_id="evil-good", payload=[1]),
    "invoke_text_data": op(
        "InvokeFunction", "i", "call", function_id="evil-good", payload={"data": "x"}
    ),
    "invoke_bad_timeout": op("InvokeFunction", "i", "call", function_id="evil-good", timeout=5),
    "ai_no_url": op("AIGateway", "a", "ask", body={"model": "m"}, format="openai-chat"),
    "ai_bad_url": op("AIGateway", "a", "ask", url="ftp://llm/v1", body={}, format="anthropic"),
    "ai_list_body": op("AIGateway", "a", "ask", url="http://llm/v1", body=[1], format="gemini"),
    "ai_number_header": op("AIGateway", "a", "ask", url="http://llm/", body={}, headers={"x": 1}),
    "signal_missing": op("WaitForSignal", "g", "approval", timeout="1h"),
    "signal_bad_conflict": op("WaitForSignal", "g", "approval", signal="s", conflict="never"),
    "signal_bad_if": op("WaitForSignal", "g", "approval", signal="s", **{"if": "async.data =="}),
    "long_step_id": step_run("x" * 65, 1),
    "nul_step_name": step_run("n", 1) | {"displayName": "a\x00b"},
}


async def bad_op(w: asyncio.StreamWriter, req: dict[str, Any], app: "EvilApp", mode: str) -> None:
    await answer(w, 206, [BAD_OPS[mode]])


async def output_1e400(w: asyncio.StreamWriter, req: dict[str, Any], app: "EvilApp") -> None:
    await answer(w, 200, None, raw=b'{"total": 1e400}')


async def deep_json(w: asyncio.StreamWriter, req: dict[str, Any], app: "EvilApp") -> None:
    await answer(w, 200, None, raw=b"[" * 100_000 + b"]" * 100_000)


async def unicode_digit_t(w: asyncio.StreamWriter, req: dict[str, Any], app: "EvilApp") -> None:
    # "²".isdigit() is True but int("²") raises: the check once crashed the scheduler
    await _signed_as(w, "t=\u00b2\u0661&s=00")


async def unicode_s(w: asyncio.StreamWriter, req: dict[str, Any], app: "EvilApp") -> None:
    # hmac.compare_digest raises TypeError on non-ASCII text
    await _signed_as(w, f"t={int(time.time())}&s=\u00e9\u00e9")


async def long_t(w: asyncio.StreamWriter, req: dict[str, Any], app: "EvilApp") -> None:
    await _signed_as(w, "t=" + "9" * 5000 + "&s=00")  # int() refuses past 4300 digits


async def _signed_as(w: asyncio.StreamWriter, signature: str) -> None:
    body = b'{"ok": true}'
    w.write(head(200, len(body), {"x-inngest-signature": signature}) + body)
    await w.drain()


MODES: dict[str, Handler] = {
    f.__name__: f
    for f in (
        not_json,
        completed_not_json,
        unknown_op,
        wrong_types,
        reset,
        never_ends,
        huge_response,
        big_step,
        fat_state,
        many_steps,
        huge_int,
        good,
        unsigned,
        wrong_key,
        output_1e400,
        unicode_digit_t,
        unicode_s,
        long_t,
        deep_json,
    )
} | {mode: functools.partial(bad_op, mode=mode) for mode in BAD_OPS}


class EvilApp(StreamServer):
    """Serves MODES on 127.0.0.1 from a thread of its own; counts the calls per mode."""

    def __init__(self, key: str | None = None, modes: dict[str, Handler] | None = None) -> None:
        super().__init__()
        self.key = key
        self.modes = MODES | (modes or {})  # a test module's own misbehaviours besides these
        self.calls: dict[str, int] = {}
        self.request_headers: dict[str, str] = {}  # of the latest request
        self.saved: dict[str, bytes] = {}  # what a mode keeps between requests

    def url(self, mode: str) -> str:
        return f"http://127.0.0.1:{self.port}/{mode}"

    async def _handle(self, r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        try:
            request_line = (await r.readline()).decode()
            headers = await _headers(r)
            body = await r.readexactly(int(headers.get("content-length", "0")))
            mode = request_line.split(" ")[1].split("?")[0].strip("/")
            self.request_headers = headers
            self.calls[mode] = self.calls.get(mode, 0) + 1
            await self.modes[mode](w, json.loads(body) if body else {}, self)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            with contextlib.suppress(Exception):
                w.close()


async def _headers(r: asyncio.StreamReader) -> dict[str, str]:
    found: dict[str, str] = {}
    while (line := (await r.readline()).decode().strip()) != "":
        name, _, value = line.partition(":")
        found[name.strip().lower()] = value.strip()
    return found
