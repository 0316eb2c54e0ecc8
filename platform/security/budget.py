"""One budget for the request bodies all requests hold at once.

Each route caps its own body (security/bodies.py), but a hundred concurrent uploads just under the
cap still add up to gigabytes. A request takes its share when its handler starts reading: the
whole declared Content-Length up front, or chunk by chunk when the length is not declared. A
request whose share does not fit gets a 503 with Retry-After at once, before its body is read;
one larger than the whole budget, a 413. The share is given back when the response is done.
(uvicorn itself holds at most ~64 KiB per connection until the app reads.)
"""

import json

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send


class BudgetExceeded(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class BodyBudget:
    def __init__(self, app: ASGIApp, limit_bytes: int) -> None:
        self.app, self.limit, self.free = app, limit_bytes, limit_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _declared(Headers(scope=scope))
        held, started = 0, False

        async def counted_receive() -> Message:
            nonlocal held
            if declared is not None and held == 0 and declared > 0:
                held = self.take(declared, 0)
            message = await receive()
            size = len(message.get("body", b""))
            if declared is None and size:
                held += self.take(size, held)
            return message

        async def watched_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted_receive, watched_send)
        except BudgetExceeded as exc:
            if started:
                raise
            await _refuse(send, exc.status, str(exc))
        finally:
            self.free += held

    def take(self, size: int, held: int) -> int:
        """`size` more bytes for a request holding `held`, or why not."""
        if held + size > self.limit:  # would never fit, however long it waited
            total = held + size
            raise BudgetExceeded(413, f"the body ({total}+ bytes) is larger than Weir accepts")
        if size > self.free:
            raise BudgetExceeded(503, "too many request bodies in flight: retry shortly")
        self.free -= size
        return size


def _declared(headers: Headers) -> int | None:
    value = headers.get("content-length", "")
    return int(value) if value.isascii() and value.isdigit() else None


async def _refuse(send: Send, status: int, message: str) -> None:
    body = json.dumps({"error": message}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    if status == 503:
        headers.append((b"retry-after", b"1"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
