"""Who may call what in start mode; `weir dev` installs none of this and stays open.

One ASGI middleware in front of every route, so a route added later is protected unless it
is named here as open. Paths fall into four kinds:
- open: health probes, static files, the login page; the event API, which checks the event
  key in its path itself (api/events.py);
- sdk: /fn/register and /v0/runs/... need `Authorization: Bearer` with a signing key, raw or
  as the SDK's hash (docs/protocol.md §12.3) — that is how an app proves it holds the key;
- api (REST, GraphQL, the UI's JSON): the admin token as Bearer, user:password as Basic, or
  a UI session cookie; without one, 401;
- ui (everything else): a session cookie (or the token); without one, a redirect to /login.
"""

import base64
import binascii
import hmac
from dataclasses import dataclass
from urllib.parse import quote

from fastapi import FastAPI
from starlette.datastructures import Headers
from starlette.requests import cookie_parser
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send
from weir.platform.api import sessions
from weir.platform.clock import Clock, SystemClock
from weir.platform.executor.signing import bearer_hash, strip_prefix
from weir.platform.settings import Settings

OPEN_PATHS = frozenset({"/health", "/login"})
OPEN_PREFIXES = ("/health/", "/static/", "/e/")
SDK_PATHS = frozenset({"/fn/register"})
SDK_PREFIXES = ("/v0/runs/",)
API_PREFIXES = ("/v0/", "/v1/", "/ui/api/", "/fn/", "/metrics", "/openapi.json")
LOGIN_PATH = "/login"


@dataclass(frozen=True)
class Credential:
    """How a request proved itself: "token", "basic" or "session" (with its session)."""

    kind: str
    session: sessions.Session | None = None


def path_kind(path: str) -> str:
    if path in OPEN_PATHS or path.startswith(OPEN_PREFIXES):
        return "open"
    if path in SDK_PATHS or path.startswith(SDK_PREFIXES):
        return "sdk"
    return "api" if path.startswith(API_PREFIXES) else "ui"


def install(app: FastAPI, settings: Settings, clock: Clock | None = None) -> None:
    """Start mode only: the login page reads `app.state.auth`; the middleware guards."""
    if settings.dev:
        return
    auth = Auth(settings, clock or SystemClock())
    app.state.auth = auth
    app.add_middleware(AuthMiddleware, auth=auth)


class AuthMiddleware:
    def __init__(self, app: ASGIApp, auth: "Auth") -> None:
        self.app, self.auth = app, auth

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            refusal = self.auth.check(scope)
            if refusal is not None:
                await refusal(scope, receive, send)
                return
        await self.app(scope, receive, send)


class Auth:
    def __init__(self, settings: Settings, clock: Clock) -> None:
        self.settings, self.clock = settings, clock
        self.secret = sessions.secret_of(settings)

    def check(self, scope: Scope) -> Response | None:
        """None to let the request through (noting its credential), else the refusal."""
        kind = path_kind(scope["path"])
        headers = Headers(scope=scope)
        if kind == "open":
            return None
        if kind == "sdk":
            return None if self.sdk_ok(headers) else _sdk_refusal()
        credential = self.admin_credential(headers, basic_allowed=kind == "api")
        if credential is not None:
            scope.setdefault("state", {})["credential"] = credential
            return None
        return _api_refusal() if kind == "api" else _to_login(scope)

    def sdk_ok(self, headers: Headers) -> bool:
        presented = strip_prefix(_bearer(headers) or "")
        if not presented:
            return False
        accepted = [strip_prefix(k) for k in self.settings.signing_keys]
        accepted += [bearer_hash(k) for k in self.settings.signing_keys]
        return _any_equal(presented, accepted)

    def admin_credential(self, headers: Headers, *, basic_allowed: bool) -> Credential | None:
        token = self.settings.admin_token
        bearer = _bearer(headers)
        if token and bearer is not None and _any_equal(bearer, [token]):
            return Credential("token")
        if basic_allowed and self._basic_ok(headers):
            return Credential("basic")
        cookies = cookie_parser(headers.get("cookie", ""))
        session = sessions.read(self.secret, cookies.get(sessions.COOKIE), self.clock.now_ms())
        return Credential("session", session) if session is not None else None

    def _basic_ok(self, headers: Headers) -> bool:
        user, password = self.settings.admin_user, self.settings.admin_password
        scheme, _, value = headers.get("authorization", "").partition(" ")
        if not (user and password) or scheme.lower() != "basic":
            return False
        try:
            given = base64.b64decode(value.strip(), validate=True).decode()
        except (binascii.Error, UnicodeDecodeError):
            return False
        return _any_equal(given, [f"{user}:{password}"])

    def password_ok(self, user: str, password: str) -> bool:
        """The login form's check: the configured user and password, or the admin token."""
        want_user, want_password = self.settings.admin_user, self.settings.admin_password
        by_password = bool(want_user and want_password) and _any_equal(
            f"{user}\0{password}", [f"{want_user}\0{want_password}"]
        )
        token = self.settings.admin_token
        return by_password or (bool(token) and _any_equal(password, [token or ""]))


def _bearer(headers: Headers) -> str | None:
    scheme, _, value = headers.get("authorization", "").partition(" ")
    return value.strip() if scheme.lower() == "bearer" and value.strip() else None


def _any_equal(presented: str, accepted: list[str]) -> bool:
    # compare_digest against every candidate: the time taken does not reveal a near-miss
    results = [hmac.compare_digest(presented.encode(), a.encode()) for a in accepted]
    return any(results)


def _sdk_refusal() -> Response:
    message = (
        "this endpoint needs `Authorization: Bearer <signing key>` (the key itself or the "
        "sha256 of its hex-decoded value, as the SDKs send it) matching one of Weir's "
        "signing keys; set the app's INNGEST_SIGNING_KEY / WEIR_SIGNING_KEY to Weir's key"
    )
    return JSONResponse({"error": message}, 401, headers={"www-authenticate": "Bearer"})


def _api_refusal() -> Response:
    message = (
        "login required: send `Authorization: Bearer <admin token>` (--admin-token), HTTP "
        "Basic with --admin-user/--admin-password, or the UI's session cookie"
    )
    return JSONResponse(
        {"error": message}, 401, headers={"www-authenticate": 'Bearer realm="weir"'}
    )


def _to_login(scope: Scope) -> Response:
    target = scope["path"] + (f"?{scope['query_string'].decode()}" if scope["query_string"] else "")
    return RedirectResponse(f"{LOGIN_PATH}?next={quote(target, safe='')}", 303)
