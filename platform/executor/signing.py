"""Request signatures (docs/protocol.md §12): HMAC-SHA256 over the body and the time, keyed by the
signing key without its `signkey-<env>-` prefix, taken as ASCII text (not hex-decoded).

weir.sdk also binds each signed answer to the request it answers (`X-Weir-Signature`): an
HMAC over the request's own signature, the time and the raw answer body, so an answer can
only ever be accepted for the one request it was made for."""

import hashlib
import hmac
import re

_PREFIX = re.compile(r"^signkey-\w+-")
BOUND_HEADER = "x-weir-signature"
_BOUND = b"weir-answer-v1\n"  # a distinct message: a bound MAC is never a plain one


def strip_prefix(key: str) -> str:
    return _PREFIX.sub("", key)


def sign(body: bytes, key: str, unix_seconds: int) -> str:
    return f"t={unix_seconds}&s={_mac(key, body + str(unix_seconds).encode())}"


def parse(header: str) -> tuple[int, str] | None:
    """(t, s) of a `t=<seconds>&s=<hex>` header, or None if either is missing or malformed."""
    fields = dict(part.split("=", 1) for part in header.split("&") if "=" in part)
    t, s = fields.get("t", ""), fields.get("s", "")
    # "²".isdigit() is True but int("²") raises, as int() does past 4300 digits, and
    # compare_digest raises on non-ASCII text: each once crashed the scheduler at every lease
    if not (t.isascii() and t.isdigit() and len(t) <= 12) or not (s and s.isascii()):
        return None
    return int(t), s


def signed_at(body: bytes, header: str, keys: list[str]) -> int | None:
    """The time of a valid signature of `body` by one of the keys, else None."""
    parsed = parse(header)
    if parsed is None:
        return None
    t, s = parsed
    message = body + str(t).encode()
    return t if any(hmac.compare_digest(_mac(key, message), s) for key in keys) else None


def verify(body: bytes, header: str, keys: list[str]) -> bool:
    return signed_at(body, header, keys) is not None


def bind(body: bytes, key: str, unix_seconds: int, request_mac: str) -> str:
    """The `X-Weir-Signature` of an answer to the request whose signature's `s` is given."""
    return f"t={unix_seconds}&s={_mac(key, _bound(body, unix_seconds, request_mac))}"


def bound_to(body: bytes, header: str, keys: list[str], request_mac: str) -> bool:
    parsed = parse(header)
    if parsed is None or not request_mac:
        return False
    t, s = parsed
    message = _bound(body, t, request_mac)
    return any(hmac.compare_digest(_mac(key, message), s) for key in keys)


def _bound(body: bytes, t: int, request_mac: str) -> bytes:
    return _BOUND + request_mac.encode() + b"\n" + str(t).encode() + b"\n" + body


def _mac(key: str, message: bytes) -> str:
    return hmac.new(strip_prefix(key).encode(), message, hashlib.sha256).hexdigest()


def bearer_hash(key: str) -> str:
    """What the SDK sends as `Authorization: Bearer ...`: sha256 of the hex-decoded key."""
    raw = strip_prefix(key)
    try:
        material = bytes.fromhex(raw)
    except ValueError:
        material = raw.encode()
    return hashlib.sha256(material).hexdigest()
