"""Stripe: `Stripe-Signature: t=<unix s>,v1=<hex>[,v1=<hex>...]`, each v1 the HMAC-SHA256 of
`<t>.<raw body>` keyed by the endpoint's secret (`whsec_...`, used as its text). Stripe signs
with every active secret during a rotation, hence several v1 values; v0 (test) is ignored.
Stripe's libraries allow 300 s."""

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

HEADER = "stripe-signature"
TOLERANCE_S = 300


def verify(
    body: bytes, headers: Mapping[str, str], secrets: Sequence[str], now_s: float, tolerance_s: int
) -> None:
    header = headers.get(HEADER)
    if not header:
        raise missing("Stripe-Signature")
    sent: str | None = None
    signatures: list[bytes] = []
    for item in header.split(","):
        key, _, value = item.strip().partition("=")
        if key == "t":
            sent = value
        elif key == "v1":
            signatures.append(value.strip().lower().encode())
    sent_s = unix_seconds(sent, "Stripe-Signature t=")
    if not signatures:
        raise missing("Stripe-Signature v1=")
    signed = str(sent_s).encode() + b"." + body
    expected = [hmac.new(s.encode(), signed, hashlib.sha256).hexdigest().encode() for s in secrets]
    if not any_equal(expected, signatures):
        raise no_match("Stripe-Signature")
    check_timestamp(sent_s, now_s, tolerance_s)
