"""Who is looking at a page: start mode's auth, the request's credential, its CSRF token.

Both the login pages and every rendered page need these, so they sit below both.
"""

from fastapi import Request
from weir.platform.security import sessions
from weir.platform.security.auth import Auth, Credential


def auth_of(request: Request) -> Auth | None:
    auth: Auth | None = getattr(request.app.state, "auth", None)
    return auth


def credential_of(request: Request) -> Credential | None:
    value: Credential | None = request.scope.get("state", {}).get("credential")
    return value


def csrf_for(request: Request) -> str:
    """The token the page's forms carry: empty without a session (dev mode, a Bearer call)."""
    auth, credential = auth_of(request), credential_of(request)
    if auth is None or credential is None or credential.session is None:
        return ""
    return sessions.csrf_token(auth.secret, credential.session)
