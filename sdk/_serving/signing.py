"""Request/response signatures and API auth with the signing key (§12).

Unlike the official SDK, a request is refused when its signature is more than five minutes
old (or ahead), as Inngest's Go SDK does, and every signed answer is also bound to the request
it answers (`X-Weir-Signature`: an HMAC over the request's own signature, the time and the
body), so that a server that checks it (Weir) never accepts it for another request."""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import time
from collections.abc import Sequence

import rfc8785

_PREFIX = re.compile(r"^signkey-\w+-")
WINDOW_S = 300  # a request signed further from now than this is refused
BOUND_HEADER = "x-weir-signature"
_BOUND = b"weir-answer-v1\n"  # a distinct message: a bound MAC is never a plain one


def strip_prefix(key: str) -> str:
    return _PREFIX.sub("", key)


def hashed_key(key: str) -> str:
    """What goes after `Bearer `: sha256 of the hex-decoded key, prefix removed."""
    return hashlib.sha256(bytes.fromhex(strip_prefix(key))).hexdigest()


class UnreadableBody(ValueError):
    """The body cannot be put in canonical JSON, so its signature cannot be checked; the
    message says why (this is not a wrong signing key)."""


def canonical(body: bytes) -> bytes:
    """JCS form of a JSON body, so transit whitespace and key order do not matter. JCS carries
    numbers as doubles: an integer past ±(2^53-1) is read as the double it stands for (as the
    official SDK's `jcs` does), so the bytes a server signed always come out the same."""
    if not body.strip():
        return b""
    try:
        return bytes(rfc8785.dumps(json.loads(body, parse_int=_jcs_int)))
    except (ValueError, RecursionError) as exc:  # rfc8785's errors are ValueErrors
        raise UnreadableBody(
            f"the request body cannot be put in canonical JSON (RFC 8785) to check its "
            f"signature: {exc}"
        ) from None


def _jcs_int(text: str) -> int | float:
    number = int(text)
    return number if abs(number) <= _SAFE_INTEGER else float(number)


_SAFE_INTEGER = 2**53 - 1


def signature(message: bytes, key: str, at: int | None = None) -> str:
    """`t=<seconds>&s=<hex>`: HMAC-SHA256 keyed with the key's text over message + t."""
    t = int(time.time()) if at is None else at
    mac = hmac.new(strip_prefix(key).encode(), message + str(t).encode(), hashlib.sha256)
    return f"t={t}&s={mac.hexdigest()}"


def verify(
    header: str | None, body: bytes, keys: Sequence[str], now: int | None = None
) -> str | None:
    """The key that signed this request body, or None; the signature must carry a time within
    WINDOW_S of now, so a captured request cannot be replayed later. Raises UnreadableBody
    for a body no signature could be checked over."""
    fields = _fields(header)
    if fields is None:
        return None
    t, s = fields
    current = int(time.time()) if now is None else now
    if abs(current - int(t)) > WINDOW_S:
        return None
    message = canonical(body)  # UnreadableBody: the caller says so, not "Unauthorized"
    for key in keys:
        mac = hmac.new(strip_prefix(key).encode(), message + t.encode(), hashlib.sha256)
        if hmac.compare_digest(mac.hexdigest(), s):
            return key
    return None


def request_mac(header: str | None) -> str | None:
    """The `s` of a request's signature: what an answer to it is bound to."""
    fields = _fields(header)
    return None if fields is None else fields[1]


def bound_signature(body: bytes, key: str, request_s: str, at: int | None = None) -> str:
    """`X-Weir-Signature` of an answer: HMAC over the request's `s`, the time and the body."""
    t = int(time.time()) if at is None else at
    message = _BOUND + request_s.encode() + b"\n" + str(t).encode() + b"\n" + body
    mac = hmac.new(strip_prefix(key).encode(), message, hashlib.sha256)
    return f"t={t}&s={mac.hexdigest()}"


def _fields(header: str | None) -> tuple[str, str] | None:
    """(t, s) of a signature header; None unless both are there and t is a number."""
    if not header:
        return None
    fields = dict(part.split("=", 1) for part in header.split("&") if "=" in part)
    t, s = fields.get("t", ""), fields.get("s", "")
    if not (t.isascii() and t.isdigit() and len(t) <= 12) or not s:
        return None
    return t, s
