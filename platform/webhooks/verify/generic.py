"""A generic HMAC, for providers without a scheme of their own: the digest of a signed content
template (`{body}`, the raw body; `{timestamp}`, the timestamp header's text) with SHA-1, SHA-256
or SHA-512, sent hex or base64 in a header of the source's choosing, after an optional prefix
(`sha256=`). With a timestamp header, deliveries outside the tolerance are refused."""

import base64
import binascii
import hashlib
import hmac
import re
from collections.abc import Mapping, Sequence
from enum import StrEnum

from weir.platform.foundation.record_type import record
from weir.platform.webhooks.verify.failure import (
    VerificationFailed,
    any_equal,
    check_timestamp,
    missing,
    no_match,
    unix_seconds,
)

TOLERANCE_S = 300
_PLACEHOLDER = re.compile(r"\{(body|timestamp)\}")
_PARTS = re.compile(r"(\{body\}|\{timestamp\})")
_HEADER_NAME = re.compile(r"[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}")
MAX_TEMPLATE = 200


class Algorithm(StrEnum):
    SHA1 = "sha1"
    SHA256 = "sha256"
    SHA512 = "sha512"


class Encoding(StrEnum):
    HEX = "hex"
    BASE64 = "base64"


class TimestampUnit(StrEnum):
    SECONDS = "s"
    MILLISECONDS = "ms"


@record
class HmacOptions:
    header: str  # where the signature is sent (any case)
    algorithm: Algorithm = Algorithm.SHA256
    encoding: Encoding = Encoding.HEX
    prefix: str = ""  # before the digest in the header, e.g. "sha256="
    template: str = "{body}"
    timestamp_header: str | None = None
    timestamp_unit: TimestampUnit = TimestampUnit.SECONDS


def problems(options: HmacOptions) -> list[str]:
    """What is wrong with the options, saying what is allowed."""
    found = []
    for what, name in (("header", options.header), ("timestamp_header", options.timestamp_header)):
        if name is not None and not _HEADER_NAME.fullmatch(name):
            found.append(f"hmac.{what} must be an HTTP header name (1 to 100 token characters)")
    if len(options.prefix) > 50 or not options.prefix.isascii():
        found.append("hmac.prefix must be at most 50 ASCII characters")
    if len(options.template) > MAX_TEMPLATE or "{body}" not in options.template:
        found.append(
            f"hmac.template must contain {{body}} (the raw body) and be at most {MAX_TEMPLATE} "
            "characters; {timestamp} stands for the timestamp header's text"
        )
    leftover = _PLACEHOLDER.sub("", options.template)
    if "{" in leftover or "}" in leftover:
        found.append("hmac.template may hold only the placeholders {body} and {timestamp}")
    if "{timestamp}" in options.template and options.timestamp_header is None:
        found.append("hmac.template uses {timestamp}: set hmac.timestamp_header as well")
    return found


def verify(
    options: HmacOptions,
    body: bytes,
    headers: Mapping[str, str],
    secrets: Sequence[str],
    now_s: float,
    tolerance_s: int,
) -> None:
    header = headers.get(options.header.lower(), "").strip()
    if not header.startswith(options.prefix) or not header[len(options.prefix) :]:
        shape = f" ({options.prefix}<signature>)" if options.prefix else ""
        raise missing(options.header + shape)
    stamp, sent = "", 0
    if options.timestamp_header is not None:
        stamp = headers.get(options.timestamp_header.lower(), "").strip()
        sent = unix_seconds(stamp, options.timestamp_header)
    parts = _PARTS.split(options.template)
    signed = b"".join(
        body if part == "{body}" else stamp.encode() if part == "{timestamp}" else part.encode()
        for part in parts
    )
    presented = _decoded(options, header[len(options.prefix) :])
    digest = getattr(hashlib, options.algorithm.value)
    expected = [hmac.new(s.encode(), signed, digest).digest() for s in secrets]
    if presented is None or not any_equal(expected, [presented]):
        raise no_match(options.header)
    if options.timestamp_header is not None:
        per_s = 1000 if options.timestamp_unit == TimestampUnit.MILLISECONDS else 1
        check_timestamp(sent / per_s, now_s, tolerance_s)


def _decoded(options: HmacOptions, text: str) -> bytes | None:
    try:
        if options.encoding == Encoding.HEX:
            return bytes.fromhex(text)
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None


__all__ = ["HmacOptions", "VerificationFailed", "problems", "verify"]
