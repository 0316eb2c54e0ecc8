"""Request signatures (docs/protocol.md §12): HMAC-SHA256 over the body and the time, keyed by the
signing key without its `signkey-<env>-` prefix, taken as ASCII text (not hex-decoded)."""

import hashlib
import hmac
import re

_PREFIX = re.compile(r"^signkey-\w+-")


def strip_prefix(key: str) -> str:
    return _PREFIX.sub("", key)


def sign(body: bytes, key: str, unix_seconds: int) -> str:
    mac = hmac.new(strip_prefix(key).encode(), body + str(unix_seconds).encode(), hashlib.sha256)
    return f"t={unix_seconds}&s={mac.hexdigest()}"


def verify(body: bytes, header: str, keys: list[str]) -> bool:
    fields = dict(part.split("=", 1) for part in header.split("&") if "=" in part)
    t, s = fields.get("t", ""), fields.get("s", "")
    # "²".isdigit() is True but int("²") raises, as int() does past 4300 digits, and
    # compare_digest raises on non-ASCII text: each once crashed the scheduler at every lease
    if not (t.isascii() and t.isdigit() and len(t) <= 20) or not (s and s.isascii()):
        return False
    return any(hmac.compare_digest(sign(body, key, int(t)).split("&s=")[1], s) for key in keys)


def bearer_hash(key: str) -> str:
    """What the SDK sends as `Authorization: Bearer ...`: sha256 of the hex-decoded key."""
    raw = strip_prefix(key)
    try:
        material = bytes.fromhex(raw)
    except ValueError:
        material = raw.encode()
    return hashlib.sha256(material).hexdigest()
