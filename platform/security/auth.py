"""Who may call what in start mode; `weir dev` installs none of this and stays open.

One ASGI middleware in front of every route, so a route added later is protected unless it
is named here as open. Paths fall into four kinds:
- open: health probes, static files, the login page; the event API, which checks the event
  key in its path itself (api/events.py); webhooks, whose source id and provider signature
  prove the sender (api/webhooks.py);
- sdk: /fn/register, /v0/runs/... and /v0/connect/... need `Authorization: Bearer` with a
  signing key, raw or as the SDK's hash (docs/protocol.md §12.3) — that is how an app proves
  it holds the key;
- api (REST, GraphQL, the UI's JSON): the admin token as Bearer, user:password as Basic, or
  a UI session cookie; without one, 401;
- ui (everything else): a session cookie (or the token); without one, a redirect to /login.
A wrong user:password backs off per (user, client address) and per address, a wrong signing
key per address (security/lockout.py: 429 with Retry-After); the admin token is never locked
out. A session ended by logout stays refused until it would have expired.
"""

import base64
import hmac
from dataclasses import dataclass
from urllib.parse import quote

from fastapi import FastAPI
from starlette.datastructures import Headers
from starlette.requests import cookie_parser
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send
from weir.platform.executor.signing import bearer_hash, strip_prefix
from weir.platform.foundation.clock import Clock, SystemClock
from weir.platform.runtime.tx import Tx
from weir.platform.security import sessions
from weir.platform.security.lockout import Lockout
from weir.platform.service import Platform
from weir.platform.settings import Settings
from weir.platform.store.flow import gate_state as gatestate

OPEN_PATHS = frozenset({"/health", "/login"})
OPEN_PREFIXES = ("/health/", "/static/", "/e/", "/webhooks/")
SDK_PATHS = frozenset({"/fn/register"})
SDK_PREFIXES = ("/v0/runs/", "/v0/connect/")
API_PREFIXES = ("/v0/", "/v1/", "/ui/api/", "/fn/", "/metrics", "/openapi.json")
LOGIN_PATH = "/login"
REVOKED = "session"  # gate_state rows naming a logged-out session's nonce until it expires


@dataclass(frozen=True)
class Credential:
    """How a request proved itself: "token", "basic" or "session" (with its session)."""

    kind: str
    session: sessions.Session | None = None


@dataclass(frozen=True)
class Presented:
    """Admin credentials a request carries: the admin token (Bearer) or user:password (Basic)."""

    kind: str
    secret: str
    user: str | None = None


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
            refusal = await self.auth.check(scope)
            if refusal is not None:
                await refusal(scope, receive, send)
                return
        await self.app(scope, receive, send)


class Auth:
    def __init__(self, settings: Settings, clock: Clock) -> None:
        self.settings, self.clock = settings, clock
        self.secret = sessions.secret_of(settings)
        self.lockout = Lockout(clock)

    async def check(self, scope: Scope) -> Response | None:
        """None to let the request through (noting its credential), else the refusal."""
        kind = path_kind(scope["path"])
        headers = Headers(scope=scope)
        if kind == "open":
            return None
        if kind == "sdk":
            client = client_of(scope)
            wait = self.lockout.key_retry_after_s(client)
            if wait:
                return too_many(wait, what="signing-key checks")
            if self.sdk_ok(headers):
                return None
            self.lockout.key_failed(client)
            return _sdk_refusal()
        presented = _presented(headers, basic_allowed=kind == "api")
        credential: Credential | None = None
        if presented is not None and presented.kind == "token":
            credential = Credential("token") if self.token_ok(presented.secret) else None
        elif presented is not None:
            wait = self.lockout.retry_after_s(client_of(scope), presented.user)
            if wait:
                return too_many(wait)
            credential = self.admin_credential(presented, client_of(scope))
        if credential is None:
            credential = await self.session_credential(scope, headers)
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

    def token_ok(self, presented: str) -> bool:
        """The admin token: never locked out (lockout.py), so its strength is its guard."""
        token = self.settings.admin_token
        return bool(token) and _any_equal(presented, [token or ""])

    def admin_credential(self, presented: Presented, client: str) -> Credential | None:
        """user:password (Basic) checked, the outcome noted for the back-off."""
        user, password = self.settings.admin_user, self.settings.admin_password
        given = f"{presented.user}:{presented.secret}"
        ok = bool(user and password) and _any_equal(given, [f"{user}:{password}"])
        if not ok:
            self.lockout.failed(client, presented.user)
            return None
        self.lockout.succeeded(client, presented.user)
        return Credential("basic")

    async def session_credential(self, scope: Scope, headers: Headers) -> Credential | None:
        cookies = cookie_parser(headers.get("cookie", ""))
        session = sessions.read(self.secret, cookies.get(sessions.COOKIE), self.clock.now_ms())
        if session is None or await is_revoked(_platform(scope), session, self.clock.now_ms()):
            return None
        return Credential("session", session)

    def password_ok(self, user: str, password: str) -> bool:
        """The login form's check of the configured user and password (the form takes the
        admin token too: `token_ok`, checked before any lock)."""
        want_user, want_password = self.settings.admin_user, self.settings.admin_password
        return bool(want_user and want_password) and _any_equal(
            f"{user}\0{password}", [f"{want_user}\0{want_password}"]
        )


async def revoke(weir: Platform, session: sessions.Session) -> None:
    """Logout: the session's cookie is refused from now on, by every process sharing the store
    and after restarts, until it would have expired anyway."""

    def save(tx: Tx) -> None:
        gatestate.drop_expired(tx.conn, REVOKED, tx.now)  # those cookies are refused anyway
        gatestate.save(tx.conn, REVOKED, session.nonce, {}, session.expires_ms)

    await weir.write(save)


async def is_revoked(weir: Platform, session: sessions.Session, now: int) -> bool:
    found = await weir.read(lambda c: gatestate.load(c, REVOKED, session.nonce, now))
    return found is not None


def client_of(scope: Scope) -> str:
    """The caller's address (the proxy's X-Forwarded-For one when uvicorn trusts the proxy)."""
    client = scope.get("client")
    return str(client[0]) if client else "unknown"


def too_many(wait_s: int, what: str = "logins") -> Response:
    message = f"too many failed {what} from this address: retry in {wait_s} s"
    return JSONResponse({"error": message}, 429, headers={"retry-after": str(wait_s)})


def _platform(scope: Scope) -> Platform:
    weir: Platform = scope["app"].state.platform
    return weir


def _presented(headers: Headers, *, basic_allowed: bool) -> Presented | None:
    bearer = _bearer(headers)
    if bearer is not None:
        return Presented("token", bearer)
    scheme, _, value = headers.get("authorization", "").partition(" ")
    if not basic_allowed or scheme.lower() != "basic":
        return None
    try:
        given = base64.b64decode(value.strip(), validate=True).decode()
    except (ValueError, UnicodeDecodeError):  # not base64 (non-ASCII too), or not UTF-8
        return Presented("basic", "", "")
    user, _, password = given.partition(":")
    return Presented("basic", password, user)


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
