"""Start mode's login: the login page, the session cookie, and CSRF-safe form posts.

The checks themselves live in `weir.platform.security.auth`; in `weir dev` (no `app.state.auth`)
there is no login, and form posts are only checked to come from Weir's own pages.
"""

import asyncio
from urllib.parse import urlsplit

from fastapi import APIRouter, Form, HTTPException, Request
from fastapi.responses import RedirectResponse, Response
from weir.platform.api.deps import platform
from weir.platform.security import sessions
from weir.platform.security.auth import client_of, revoke
from weir.web.render import page
from weir.web.session import auth_of, credential_of

router = APIRouter(include_in_schema=False)
FAILED_LOGIN_DELAY_S = 0.5  # slows password guessing down


async def protect_form(request: Request) -> None:
    """Refuse a post another site made the browser send: by its Origin, and, for a session,
    by the CSRF token the page's form carried (`csrf` field or `x-csrf-token` header)."""
    origin = request.headers.get("origin")  # "null" (a sandboxed frame) is foreign too
    if origin and urlsplit(origin).netloc != request.headers.get("host"):
        raise HTTPException(403, "this action must come from Weir's own pages")
    auth, credential = auth_of(request), credential_of(request)
    if auth is None or credential is None or credential.session is None:
        return  # dev mode, or a Bearer token a browser never sends by itself
    presented = request.headers.get("x-csrf-token") or str((await request.form()).get("csrf", ""))
    if not sessions.csrf_ok(auth.secret, credential.session, presented):
        raise HTTPException(
            403, "the form's CSRF token is missing or stale: reload the page and try again"
        )


@router.get("/login")
async def login_page(request: Request, next: str = "/runs") -> Response:
    if auth_of(request) is None:
        return RedirectResponse("/runs", 303)  # weir dev: no login
    return page(request, "login.html", next=_local(next), error="")


@router.post("/login")
async def login(
    request: Request,
    user: str = Form(""),
    password: str = Form(""),
    next: str = Form("/runs"),
) -> Response:
    await protect_form(request)
    auth = auth_of(request)
    if auth is None:
        return RedirectResponse("/runs", 303)
    client, who = client_of(request.scope), user or None
    by_token = auth.token_ok(password)  # the admin token is never locked out (lockout.py)
    wait = 0 if by_token else auth.lockout.retry_after_s(client, who)
    if wait:
        return _locked(request, next, wait)
    if not (by_token or auth.password_ok(user, password)):
        auth.lockout.failed(client, who)
        await asyncio.sleep(FAILED_LOGIN_DELAY_S)
        error = "Wrong user name or password (or admin token). Check Weir's --admin-* settings."
        return page(request, "login.html", 401, next=_local(next), error=error)
    auth.lockout.succeeded(client, who)
    response = RedirectResponse(_local(next), 303)
    cookie = sessions.issue(auth.secret, user or "admin", auth.clock.now_ms())
    response.set_cookie(
        sessions.COOKIE,
        cookie,
        max_age=sessions.LIFETIME_MS // 1000,
        httponly=True,
        samesite="lax",
        secure=request.url.scheme == "https",
    )
    return response


def _locked(request: Request, next: str, wait_s: int) -> Response:
    error = f"Too many failed logins: try again in {wait_s} seconds."
    response = page(request, "login.html", 429, next=_local(next), error=error)
    response.headers["retry-after"] = str(wait_s)
    return response


@router.post("/logout")
async def logout(request: Request) -> Response:
    await protect_form(request)
    credential = credential_of(request)
    if credential is not None and credential.session is not None:
        await revoke(await platform(request), credential.session)  # the cookie alone is not the end
    response = RedirectResponse("/login", 303)
    response.delete_cookie(sessions.COOKIE, httponly=True, samesite="lax")
    return response


def _local(target: str) -> str:
    """Only a path on this server: never an open redirect to another site."""
    parts = urlsplit(target)
    if parts.scheme or parts.netloc or not target.startswith("/") or target.startswith("//"):
        return "/runs"
    return target
