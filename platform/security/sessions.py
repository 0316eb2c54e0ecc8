"""Signed session cookies for the UI and the CSRF tokens bound to them.

A session is `<payload>.<mac>`: the payload names the user, an expiry and a random nonce; the
MAC is HMAC-SHA256 under a secret derived from the signing key and the admin credentials, so
every process sharing that configuration accepts it, and changing a password ends every
session. The CSRF token of a session is a second MAC over its nonce.
"""

import base64
import hashlib
import hmac
import json
import secrets
from dataclasses import dataclass

from weir.platform.settings import Settings

COOKIE = "weir_session"
LIFETIME_MS = 12 * 3600 * 1000


@dataclass(frozen=True)
class Session:
    user: str
    expires_ms: int
    nonce: str


def secret_of(settings: Settings) -> bytes:
    parts = (
        "weir-session",
        *settings.signing_keys,
        settings.admin_token or "",
        settings.admin_user or "",
        settings.admin_password or "",
    )
    return hashlib.sha256("\0".join(parts).encode()).digest()


def issue(secret: bytes, user: str, now_ms: int) -> str:
    payload = {"u": user, "exp": now_ms + LIFETIME_MS, "n": secrets.token_hex(16)}
    text = _b64(json.dumps(payload, separators=(",", ":")).encode())
    return f"{text}.{_mac(secret, 'session', text)}"


def read(secret: bytes, cookie: str | None, now_ms: int) -> Session | None:
    """The session a cookie carries, or None if it is missing, forged or expired."""
    text, _, mac = (cookie or "").partition(".")
    if not text or not _same(mac, _mac(secret, "session", text)):
        return None
    try:
        value = json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
        session = Session(str(value["u"]), int(value["exp"]), str(value["n"]))
    except (ValueError, KeyError, TypeError):
        return None
    return session if session.expires_ms > now_ms else None


def csrf_token(secret: bytes, session: Session) -> str:
    return _mac(secret, "csrf", session.nonce)


def csrf_ok(secret: bytes, session: Session, presented: str) -> bool:
    return _same(presented, csrf_token(secret, session))


def _same(presented: str, expected: str) -> bool:
    # as bytes: compare_digest refuses str that is not ASCII, and a client chooses `presented`
    return hmac.compare_digest(presented.encode(), expected.encode())


def _mac(secret: bytes, purpose: str, text: str) -> str:
    return hmac.new(secret, f"{purpose}\0{text}".encode(), hashlib.sha256).hexdigest()


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")
