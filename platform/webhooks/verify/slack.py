"""Slack: `X-Slack-Signature: v0=<hex>`, the HMAC-SHA256 of `v0:<X-Slack-Request-Timestamp>:<raw
body>` keyed by the app's signing secret; Slack asks for requests older than 5 minutes to be
refused."""

import hashlib
import hmac
from collections.abc import Mapping, Sequence

from weir.platform.webhooks.verify.failure import (
    any_equal,
    check_timestamp,
    missing,
    no_match,
    unix_seconds,
)

SIGNATURE = "x-slack-signature"
TIMESTAMP = "x-slack-request-timestamp"
PREFIX = "v0="
TOLERANCE_S = 300


def verify(
    body: bytes, headers: Mapping[str, str], secrets: Sequence[str], now_s: float, tolerance_s: int
) -> None:
    header = headers.get(SIGNATURE, "").strip()
    if not header.startswith(PREFIX):
        raise missing("X-Slack-Signature (v0=<hex>)")
    sent_s = unix_seconds(headers.get(TIMESTAMP), "X-Slack-Request-Timestamp")
    signed = b"v0:" + str(sent_s).encode() + b":" + body
    expected = [
        (PREFIX + hmac.new(s.encode(), signed, hashlib.sha256).hexdigest()).encode()
        for s in secrets
    ]
    if not any_equal(expected, [header.lower().encode()]):
        raise no_match("X-Slack-Signature")
    check_timestamp(sent_s, now_s, tolerance_s)
