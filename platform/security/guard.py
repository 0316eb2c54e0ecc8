"""What a web page must not make a browser do to Weir, in `weir dev` and `weir start` alike.

A page on any site can make the visitor's browser send requests to Weir on their loopback:
- DNS rebinding: the attacker's name resolves to 127.0.0.1, so its pages are "same-origin"
  with Weir. Weir answers only to Host names it knows (loopback names, IP literals, its own
  --host and `--allowed-hosts`); a rebound name never is one of them.
- cross-site posts (forms, `fetch` with `text/plain`, `Origin: null` from sandboxed frames):
  a state-changing request that a browser marks as coming from another origin is refused, and
  the JSON APIs accept only JSON content types, which no page can send cross-origin without
  a CORS preflight (that Weir never grants).
- cross-site WebSockets: a browser opens one from any page (only the server can refuse it, by
  its Origin), so a WebSocket upgrade meets the same Host and Origin rules as a post.
Clients that are not browsers (SDKs, curl) send no Origin and are unaffected.
"""

import ipaddress
import json
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send
from weir.platform.settings import WILDCARD_HOSTS, Settings

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
BODY_METHODS = frozenset({"POST"})  # the JSON endpoints take no other; the rest are 405
# the endpoints that read a JSON body (a POST elsewhere is a UI form, or a 405)
JSON_PATHS = frozenset({"/fn/register", "/v0/gql"})
JSON_PREFIXES = ("/e/",)
LOOPBACK_NAMES = ("localhost",)
FOREIGN_FETCH_SITES = frozenset({"cross-site", "same-site"})  # a sibling port is same-site
CROSS_SITE = "cross-site requests are refused: use Weir's own pages or an API client"


class RequestGuard:
    """ASGI middleware: refuses unknown Hosts, foreign Origins and non-JSON bodies to JSON
    endpoints before any route runs."""

    def __init__(self, app: ASGIApp, settings: Settings) -> None:
        self.app = app
        self.extra_hosts = tuple(h.strip().lower() for h in settings.allowed_hosts if h.strip())
        bind = settings.host.strip("[]").lower()
        self.own_host = "" if _is_wildcard(bind) else bind

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            problem = self.problem(scope)
            if problem is not None:
                status, message = problem
                if scope["type"] == "http":
                    await _refuse(send, status, message)
                else:
                    await _refuse_upgrade(scope, receive, send, status, message)
                return
        await self.app(scope, receive, send)

    def problem(self, scope: Scope) -> tuple[int, str] | None:
        headers = Headers(scope=scope)
        host = headers.get("host", "")
        if host and not self.host_allowed(_hostname(host)):
            return 400, (
                f"Weir does not answer to the host name {host!r}: set --allowed-hosts "
                "(WEIR_ALLOWED_HOSTS) to the names clients use to reach it, e.g. behind a proxy"
            )
        if scope["type"] == "websocket":  # a page's socket states the page's Origin as well
            return None if self.origin_ok(headers, host) else (403, CROSS_SITE)
        method = scope["method"]
        if method not in SAFE_METHODS and not self.origin_ok(headers, host):
            return 403, CROSS_SITE
        path = scope["path"]
        json_only = method in BODY_METHODS and (
            path in JSON_PATHS or path.startswith(JSON_PREFIXES)
        )
        if json_only and not _is_json(headers.get("content-type", "")):
            return 415, "this endpoint takes JSON: send `Content-Type: application/json`"
        return None

    def host_allowed(self, name: str) -> bool:
        if _is_ip(name) or name in LOOPBACK_NAMES or name.endswith(".localhost"):
            return True  # a rebound name is never an IP literal, nor loopback by definition
        return name == self.own_host or self.listed(name)

    def listed(self, name: str) -> bool:
        return any(_matches(entry, name) for entry in self.extra_hosts)

    def origin_ok(self, headers: Headers, host: str) -> bool:
        if headers.get("sec-fetch-site", "").lower() in FOREIGN_FETCH_SITES:
            return False
        origin = headers.get("origin")
        if origin is None:
            return True  # not sent by a browser's cross-origin request (it always sends one)
        try:
            netloc = urlsplit(origin).netloc.lower()
        except ValueError:
            return False
        if not netloc:
            return False  # "null": a sandboxed frame, a file: page, a data: URL
        # the page's origin is this server, or a front name listed for a proxy that rewrites Host
        return netloc == host.lower() or self.listed(_hostname(netloc))


def _hostname(host: str) -> str:
    """The name of a Host header or netloc, without its port ("[::1]:8288" -> "::1")."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:].partition("]")[0]
    return host.rpartition(":")[0] if host.count(":") == 1 else host


def _matches(entry: str, name: str) -> bool:
    if entry.startswith("*."):
        return name.endswith(entry[1:])
    return entry in ("*", name)


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def _is_wildcard(bind: str) -> bool:
    return bind in WILDCARD_HOSTS


def _is_json(content_type: str) -> bool:
    media = content_type.partition(";")[0].strip().lower()
    return media == "application/json" or (
        media.startswith("application/") and media.endswith("+json")
    )


async def _refuse(send: Send, status: int, message: str) -> None:
    body = json.dumps({"error": message}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _refuse_upgrade(
    scope: Scope, receive: Receive, send: Send, status: int, message: str
) -> None:
    """An upgrade refused as an HTTP answer (the ASGI denial extension), else a bare close."""
    await receive()  # websocket.connect
    if "websocket.http.response" not in scope.get("extensions", {}):
        await send({"type": "websocket.close", "code": 1008, "reason": message[:123]})
        return
    body = json.dumps({"error": message}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "websocket.http.response.start", "status": status, "headers": headers})
    await send({"type": "websocket.http.response.body", "body": body})
