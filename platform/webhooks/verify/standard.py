"""Standard Webhooks (and Svix, its origin): `webhook-id`, `webhook-timestamp` (Unix s) and
`webhook-signature: v1,<base64> [v1,<base64> ...]` (Svix names them `svix-*`), each signature
the HMAC-SHA256 of `<id>.<timestamp>.<raw body>` keyed by the secret's bytes: base64 after its
`whsec_` prefix. The specification's tolerance is 5 minutes either way."""

import base64
import binascii
import hashlib
import hmac
from collections.abc import Mapping, Sequence

from weir.platform.webhooks.verify.failure import (
    Refusal,
    VerificationFailed,
    any_equal,
    check_timestamp,
    missing,
    no_match,
    unix_seconds,
)

PREFIX = "whsec_"
TOLERANCE_S = 300
FAMILIES = ("webhook", "svix")


def key_of(secret: str) -> bytes:
    """The HMAC key a `whsec_<base64>` secret stands for (ValueError if it is not one)."""
    text = secret.removeprefix(PREFIX)
    try:
        key = base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ValueError("a Standard Webhooks secret is `whsec_` and base64") from exc
    if not key:
        raise ValueError("a Standard Webhooks secret may not be empty")
    return key


def verify(
    body: bytes, headers: Mapping[str, str], secrets: Sequence[str], now_s: float, tolerance_s: int
) -> None:
    family = next((f for f in FAMILIES if f"{f}-signature" in headers), FAMILIES[0])
    msg_id = headers.get(f"{family}-id", "").strip()
    header = headers.get(f"{family}-signature", "")
    if not msg_id:
        raise missing(f"{family}-id")
    if not header:
        raise missing(f"{family}-signature")
    sent_s = unix_seconds(headers.get(f"{family}-timestamp"), f"{family}-timestamp")
    presented = []
    for item in header.split():
        version, _, signature = item.partition(",")
        if version != "v1":
            continue  # v1a (asymmetric) and later versions are not HMACs
        try:
            presented.append(base64.b64decode(signature, validate=True))
        except (binascii.Error, ValueError):
            continue
    if not presented:
        raise VerificationFailed(
            Refusal.MISSING_SIGNATURE, f"the {family}-signature header has no v1,<base64> value"
        )
    signed = msg_id.encode() + b"." + str(sent_s).encode() + b"." + body
    expected = [hmac.new(key_of(s), signed, hashlib.sha256).digest() for s in secrets]
    if not any_equal(expected, presented):
        raise no_match(f"{family}-signature")
    check_timestamp(sent_s, now_s, tolerance_s)
