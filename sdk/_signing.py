"""Request/response signatures and API auth with the signing key (§12)."""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import time
from collections.abc import Sequence

import rfc8785

_PREFIX = re.compile(r"^signkey-\w+-")


def strip_prefix(key: str) -> str:
    return _PREFIX.sub("", key)


def hashed_key(key: str) -> str:
    """What goes after `Bearer `: sha256 of the hex-decoded key, prefix removed."""
    return hashlib.sha256(bytes.fromhex(strip_prefix(key))).hexdigest()


def canonical(body: bytes) -> bytes:
    """JCS form of a JSON body, so transit whitespace and key order do not matter."""
    if not body.strip():
        return b""
    return bytes(rfc8785.dumps(json.loads(body)))


def signature(message: bytes, key: str, at: int | None = None) -> str:
    """`t=<seconds>&s=<hex>`: HMAC-SHA256 keyed with the key's text over message + t."""
    t = int(time.time()) if at is None else at
    mac = hmac.new(strip_prefix(key).encode(), message + str(t).encode(), hashlib.sha256)
    return f"t={t}&s={mac.hexdigest()}"


def verify(header: str | None, body: bytes, keys: Sequence[str]) -> str | None:
    """The key that signed this request body, or None. Age is not checked (§12.1)."""
    if not header:
        return None
    fields = dict(part.split("=", 1) for part in header.split("&") if "=" in part)
    try:
        message = canonical(body)
    except ValueError:
        return None
    t = fields.get("t", "")
    for key in keys:
        mac = hmac.new(strip_prefix(key).encode(), message + t.encode(), hashlib.sha256)
        if hmac.compare_digest(mac.hexdigest(), fields.get("s", "")):
            return key
    return None
