"""One budget for the request bodies all requests hold at once, charged as bytes arrive.

Each route caps its own body (security/bodies.py), but a hundred concurrent uploads just under the
cap still add up to gigabytes. A request is charged for each chunk of its body as its handler
reads it, never for a length it merely declares (a `Content-Length` of the whole budget, then
silence, would otherwise hold all of it until the body deadline). The charge is given back when
the response is done; a chunk that does not fit gets a 503 with Retry-After.

Bodies are capped per route class before any byte is read (by the declared length) and as they
arrive: a login form is tiny, a UI form at most an event typed into a page; the APIs' routes
cap their own. Only event ingest may use the whole budget: the other classes together hold at
most half of it, so uploads elsewhere never turn events away.
(uvicorn itself holds at most ~64 KiB per connection until the app reads.)
"""

import json
from enum import StrEnum

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from weir.platform.security.auth import path_kind
from weir.platform.security.bodies import declared_length

KiB = 1024


class BodyClass(StrEnum):
    LOGIN = "login"  # /login, /logout: a user name, a password and a CSRF token
    FORM = "form"  # the UI's other form posts: at most an event or invoke payload typed in
    INGEST = "ingest"  # /e/ and /webhooks/: events, capped by their routes
    API = "api"  # every other route, which reads its body with a cap of its own


CAPS: dict[BodyClass, int | None] = {
    BodyClass.LOGIN: 16 * KiB,
    BodyClass.FORM: 1024 * KiB,
    BodyClass.INGEST: None,
    BodyClass.API: None,
}


def body_class(path: str) -> BodyClass:
    if path.startswith(("/e/", "/webhooks/")):
        return BodyClass.INGEST
    if path in ("/login", "/logout"):
        return BodyClass.LOGIN
    return BodyClass.FORM if path_kind(path) == "ui" else BodyClass.API


class BudgetExceeded(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class BodyBudget:
    def __init__(self, app: ASGIApp, limit_bytes: int) -> None:
        self.app, self.limit, self.free = app, limit_bytes, limit_bytes
        self.others_free = limit_bytes // 2  # what the classes but ingest may still take

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        kind = body_class(scope["path"])
        cap = CAPS[kind]
        ceiling = self.limit if kind == BodyClass.INGEST else self.limit // 2
        ceiling = ceiling if cap is None else min(cap, ceiling)
        declared = declared_length(Headers(scope=scope))
        if declared is not None and declared > ceiling:  # refused before a byte is read
            await _refuse(send, 413, _too_large(declared, ceiling))
            return
        held, started, refused = 0, False, False

        async def counted_receive() -> Message:
            nonlocal held, refused
            message = await receive()
            size = len(message.get("body", b""))
            if size:
                try:
                    if held + size > ceiling:
                        raise BudgetExceeded(413, _too_large(held + size, ceiling))
                    self.take(size, kind)
                except BudgetExceeded as exc:
                    # answered here: a parser between us and the route (a form's) would
                    # turn the exception into a vague 400
                    if not started and not refused:
                        refused = True
                        await _refuse(send, exc.status, str(exc))
                    raise
                held += size
            return message

        async def watched_send(message: Message) -> None:
            nonlocal started
            if refused:
                return  # the refusal was the answer
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted_receive, watched_send)
        except BudgetExceeded:
            if not refused:
                raise
        finally:
            self.free += held
            if kind != BodyClass.INGEST:
                self.others_free += held

    def take(self, size: int, kind: BodyClass) -> None:
        """`size` more bytes for a request of `kind`, or why not."""
        others = kind != BodyClass.INGEST
        if size > self.free or (others and size > self.others_free):
            raise BudgetExceeded(503, "too many request bodies in flight: retry shortly")
        self.free -= size
        if others:
            self.others_free -= size


def _too_large(size: int, ceiling: int) -> str:
    return f"the body ({size}+ bytes) is larger than the {ceiling} bytes Weir accepts here"


async def _refuse(send: Send, status: int, message: str) -> None:
    body = json.dumps({"error": message}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    if status == 503:
        headers.append((b"retry-after", b"1"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
