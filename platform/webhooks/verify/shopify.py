"""Shopify: `X-Shopify-Hmac-Sha256: <base64>`, the HMAC-SHA256 of the raw body keyed by the
app's client secret. No timestamp is signed: `X-Shopify-Webhook-Id` as the event's id makes a
redelivery a duplicate (Weir's 24 h event id rule)."""

import base64
import binascii
import hashlib
import hmac
from collections.abc import Mapping, Sequence

from weir.platform.webhooks.verify.failure import any_equal, missing, no_match

HEADER = "x-shopify-hmac-sha256"


def verify(
    body: bytes, headers: Mapping[str, str], secrets: Sequence[str], now_s: float, tolerance_s: int
) -> None:
    header = headers.get(HEADER, "").strip()
    if not header:
        raise missing("X-Shopify-Hmac-Sha256")
    try:
        presented = base64.b64decode(header, validate=True)
    except (binascii.Error, ValueError):
        raise no_match("X-Shopify-Hmac-Sha256") from None
    expected = [hmac.new(s.encode(), body, hashlib.sha256).digest() for s in secrets]
    if not any_equal(expected, [presented]):
        raise no_match("X-Shopify-Hmac-Sha256")
