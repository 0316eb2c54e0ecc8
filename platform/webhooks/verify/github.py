"""GitHub: `X-Hub-Signature-256: sha256=<hex>`, the HMAC-SHA256 of the raw body keyed by the
webhook's secret. GitHub signs no timestamp: a replay is caught by the delivery id
(`X-GitHub-Delivery`) the transform makes the event's id (Weir's 24 h event id rule)."""

import hashlib
import hmac
from collections.abc import Mapping, Sequence

from weir.platform.webhooks.verify.failure import any_equal, missing, no_match

HEADER = "x-hub-signature-256"
PREFIX = "sha256="


def verify(
    body: bytes, headers: Mapping[str, str], secrets: Sequence[str], now_s: float, tolerance_s: int
) -> None:
    header = headers.get(HEADER, "").strip()
    if not header.startswith(PREFIX):
        raise missing("X-Hub-Signature-256 (sha256=<hex>)")
    presented = header[len(PREFIX) :].lower().encode()
    expected = [hmac.new(s.encode(), body, hashlib.sha256).hexdigest().encode() for s in secrets]
    if not any_equal(expected, [presented]):
        raise no_match("X-Hub-Signature-256")
