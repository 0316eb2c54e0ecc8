"""Each provider's scheme against signatures made by the provider's own library (Stripe,
Standard Webhooks, Svix, Slack) or by its documented algorithm (GitHub, Shopify, the generic
HMAC): tampered bodies, wrong and rotated secrets, stale and future timestamps."""

import base64
import hashlib
import hmac
import time
from datetime import UTC, datetime

import pytest
import standardwebhooks
import stripe
import svix
from slack_sdk.signature import SignatureVerifier
from weir.platform.webhooks.verify.failure import Refusal, VerificationFailed
from weir.platform.webhooks.verify.generic import Algorithm, Encoding, HmacOptions, TimestampUnit
from weir.platform.webhooks.verify.schemes import DEFAULT_TOLERANCE_S, Scheme, verify

BODY = b'{"id":"evt_1","type":"invoice.paid","data":{"object":{"amount":1200}}}'
OLD, NEW, WRONG = (
    "whsec_b2xkLXNlY3JldC1vbGQtc2VjcmV0",
    "whsec_bmV3LXNlY3JldC1uZXctc2VjcmV0",
    ("whsec_d3Jvbmctc2VjcmV0LXdyb25nLXg="),
)
NOW = int(time.time())


def check(
    scheme: Scheme,
    headers: dict[str, str],
    body: bytes = BODY,
    secrets: tuple[str, ...] = (NEW,),
    now: float = NOW,
    options: HmacOptions | None = None,
) -> Refusal | None:
    lower = {k.lower(): v for k, v in headers.items()}
    try:
        verify(scheme, options, body, lower, secrets, now, DEFAULT_TOLERANCE_S[scheme])
    except VerificationFailed as failed:
        return failed.refusal
    return None


# -- Stripe --------------------------------------------------------------------------------
def stripe_headers(secret: str, ts: int = NOW, body: bytes = BODY) -> dict[str, str]:
    header = stripe.WebhookSignature.generate_signature_header(body.decode(), secret, ts)
    return {"Stripe-Signature": header}


def test_stripe_accepts_what_stripes_library_signs() -> None:
    assert check(Scheme.STRIPE, stripe_headers(NEW)) is None


def test_stripe_refuses_a_tampered_body_and_a_wrong_secret() -> None:
    assert check(Scheme.STRIPE, stripe_headers(NEW), body=BODY + b" ") == Refusal.BAD_SIGNATURE
    assert check(Scheme.STRIPE, stripe_headers(WRONG)) == Refusal.BAD_SIGNATURE


def test_stripe_accepts_either_secret_while_rotating_and_both_signatures() -> None:
    assert check(Scheme.STRIPE, stripe_headers(OLD), secrets=(OLD, NEW)) is None
    assert check(Scheme.STRIPE, stripe_headers(NEW), secrets=(OLD, NEW)) is None
    # Stripe sends one v1 per active secret during its own rotation
    both = (
        stripe_headers(OLD)["Stripe-Signature"]
        + ","
        + (stripe_headers(NEW)["Stripe-Signature"].split(",")[1])
    )
    assert check(Scheme.STRIPE, {"Stripe-Signature": both}, secrets=(NEW,)) is None


def test_stripe_refuses_stale_and_future_timestamps_past_300_s() -> None:
    assert check(Scheme.STRIPE, stripe_headers(NEW, NOW - 299)) is None
    assert check(Scheme.STRIPE, stripe_headers(NEW, NOW - 301)) == Refusal.STALE_TIMESTAMP
    assert check(Scheme.STRIPE, stripe_headers(NEW, NOW + 301)) == Refusal.FUTURE_TIMESTAMP
    # and Stripe's own check agrees on the stale one
    with pytest.raises(stripe.SignatureVerificationError):
        stripe.WebhookSignature.verify_header(
            BODY.decode(), stripe_headers(NEW, NOW - 301)["Stripe-Signature"], NEW, 300
        )


def test_stripe_without_its_header_is_a_missing_signature() -> None:
    assert check(Scheme.STRIPE, {}) == Refusal.MISSING_SIGNATURE
    assert check(Scheme.STRIPE, {"Stripe-Signature": "t=abc,v1=00"}) == Refusal.MISSING_SIGNATURE


# -- Standard Webhooks and Svix ------------------------------------------------------------
def standard_headers(secret: str, ts: int = NOW, family: str = "webhook") -> dict[str, str]:
    when = datetime.fromtimestamp(ts, tz=UTC)
    if family == "svix":
        signature = svix.Webhook(secret).sign("msg_1", when, BODY.decode())
    else:
        signature = standardwebhooks.Webhook(secret).sign("msg_1", when, BODY.decode())
    return {
        f"{family}-id": "msg_1",
        f"{family}-timestamp": str(ts),
        f"{family}-signature": signature,
    }


@pytest.mark.parametrize("family", ["webhook", "svix"])
def test_standard_webhooks_accepts_what_the_libraries_sign(family: str) -> None:
    now = int(time.time())  # the libraries check against the clock, not NOW (set at import)
    headers = standard_headers(NEW, now, family=family)
    assert check(Scheme.STANDARD, headers, now=now) is None
    # the libraries' own verification agrees with ours
    svix.Webhook(NEW).verify(BODY, headers)


def test_standard_webhooks_refuses_tampering_wrong_secret_and_rotates() -> None:
    assert check(Scheme.STANDARD, standard_headers(NEW), body=b"{}") == Refusal.BAD_SIGNATURE
    assert check(Scheme.STANDARD, standard_headers(WRONG)) == Refusal.BAD_SIGNATURE
    assert check(Scheme.STANDARD, standard_headers(OLD), secrets=(OLD, NEW)) is None
    # a changed id is a changed signed content
    tampered = standard_headers(NEW) | {"webhook-id": "msg_2"}
    assert check(Scheme.STANDARD, tampered) == Refusal.BAD_SIGNATURE
    # several signatures, space-separated: one matching is enough
    two = (
        standard_headers(OLD)["webhook-signature"]
        + " "
        + standard_headers(NEW)["webhook-signature"]
    )
    assert check(Scheme.STANDARD, standard_headers(NEW) | {"webhook-signature": two}) is None


def test_standard_webhooks_tolerates_5_minutes_either_way() -> None:
    assert check(Scheme.STANDARD, standard_headers(NEW, NOW + 299)) is None
    assert check(Scheme.STANDARD, standard_headers(NEW, NOW - 301)) == Refusal.STALE_TIMESTAMP
    assert check(Scheme.STANDARD, standard_headers(NEW, NOW + 301)) == Refusal.FUTURE_TIMESTAMP
    stale = standard_headers(NEW, NOW - 301)
    with pytest.raises(standardwebhooks.webhooks.WebhookVerificationError):
        standardwebhooks.Webhook(NEW).verify(BODY, stale)


# -- Slack ---------------------------------------------------------------------------------
SLACK_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"


def slack_headers(secret: str, ts: int = NOW, body: bytes = BODY) -> dict[str, str]:
    signature = SignatureVerifier(secret).generate_signature(timestamp=str(ts), body=body)
    assert signature is not None
    return {"X-Slack-Signature": signature, "X-Slack-Request-Timestamp": str(ts)}


def test_slack_accepts_what_slacks_sdk_signs_and_refuses_the_rest() -> None:
    secrets = (SLACK_SECRET,)
    assert check(Scheme.SLACK, slack_headers(SLACK_SECRET), secrets=secrets) is None
    tampered = check(Scheme.SLACK, slack_headers(SLACK_SECRET), body=b"x", secrets=secrets)
    assert tampered == Refusal.BAD_SIGNATURE
    wrong = check(Scheme.SLACK, slack_headers("another-secret-123"), secrets=secrets)
    assert wrong == Refusal.BAD_SIGNATURE
    rotated = check(Scheme.SLACK, slack_headers(SLACK_SECRET), secrets=("x" * 16, SLACK_SECRET))
    assert rotated is None
    stale = check(Scheme.SLACK, slack_headers(SLACK_SECRET, NOW - 301), secrets=secrets)
    assert stale == Refusal.STALE_TIMESTAMP
    future = check(Scheme.SLACK, slack_headers(SLACK_SECRET, NOW + 301), secrets=secrets)
    assert future == Refusal.FUTURE_TIMESTAMP
    # the timestamp is part of what is signed: moving it breaks the signature
    moved = slack_headers(SLACK_SECRET) | {"X-Slack-Request-Timestamp": str(NOW - 5)}
    assert check(Scheme.SLACK, moved, secrets=secrets) == Refusal.BAD_SIGNATURE


# -- GitHub and Shopify (documented algorithms) --------------------------------------------
def github_headers(secret: str, body: bytes = BODY) -> dict[str, str]:
    digest = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return {"X-Hub-Signature-256": "sha256=" + digest}


def test_github_signature_of_the_raw_body() -> None:
    secret = "It's a Secret to Everybody"
    # GitHub's documented example: the digest of "Hello, World!" under this secret
    example = "757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
    assert github_headers(secret, b"Hello, World!")["X-Hub-Signature-256"] == "sha256=" + example
    assert check(Scheme.GITHUB, github_headers(secret), secrets=(secret,)) is None
    tampered = check(Scheme.GITHUB, github_headers(secret), body=b"{}", secrets=(secret,))
    assert tampered == Refusal.BAD_SIGNATURE
    assert check(Scheme.GITHUB, github_headers(secret), secrets=("other-secret",)) == (
        Refusal.BAD_SIGNATURE
    )
    assert check(Scheme.GITHUB, github_headers(secret), secrets=("old-secret", secret)) is None
    assert check(Scheme.GITHUB, {}, secrets=(secret,)) == Refusal.MISSING_SIGNATURE


def shopify_headers(secret: str, body: bytes = BODY) -> dict[str, str]:
    digest = hmac.new(secret.encode(), body, hashlib.sha256).digest()
    return {"X-Shopify-Hmac-Sha256": base64.b64encode(digest).decode()}


def test_shopify_base64_signature_of_the_raw_body() -> None:
    secret = "shpss_0123456789abcdef"
    assert check(Scheme.SHOPIFY, shopify_headers(secret), secrets=(secret,)) is None
    assert check(Scheme.SHOPIFY, shopify_headers(secret), body=BODY[:-1], secrets=(secret,)) == (
        Refusal.BAD_SIGNATURE
    )
    assert check(Scheme.SHOPIFY, shopify_headers("shpss_other"), secrets=(secret,)) == (
        Refusal.BAD_SIGNATURE
    )
    garbled = {"X-Shopify-Hmac-Sha256": "not base64!"}
    assert check(Scheme.SHOPIFY, garbled, secrets=(secret,)) == Refusal.BAD_SIGNATURE


# -- generic HMAC --------------------------------------------------------------------------
def test_generic_hmac_with_template_prefix_encoding_and_timestamp() -> None:
    options = HmacOptions(
        header="X-Partner-Signature",
        encoding=Encoding.BASE64,
        prefix="sha512=",
        template="{timestamp}:{body}",
        timestamp_header="X-Partner-Time",
        timestamp_unit=TimestampUnit.MILLISECONDS,
        algorithm=Algorithm.SHA512,
    )
    secret = "partner-secret-1"

    def headers(ts_ms: int, body: bytes = BODY, key: str = secret) -> dict[str, str]:
        signed = str(ts_ms).encode() + b":" + body
        digest = base64.b64encode(hmac.new(key.encode(), signed, hashlib.sha512).digest())
        return {"X-Partner-Signature": "sha512=" + digest.decode(), "X-Partner-Time": str(ts_ms)}

    def run(h: dict[str, str], body: bytes = BODY) -> Refusal | None:
        return check(Scheme.HMAC, h, body=body, secrets=(secret,), options=options)

    assert run(headers(NOW * 1000)) is None
    assert run(headers(NOW * 1000), body=b"{}") == Refusal.BAD_SIGNATURE
    assert run(headers(NOW * 1000, key="another-key")) == Refusal.BAD_SIGNATURE
    assert run(headers((NOW - 301) * 1000)) == Refusal.STALE_TIMESTAMP
    assert run(headers((NOW + 301) * 1000)) == Refusal.FUTURE_TIMESTAMP
    assert run({"X-Partner-Time": str(NOW * 1000)}) == Refusal.MISSING_SIGNATURE


def test_generic_hmac_plain_hex_of_the_body() -> None:
    options = HmacOptions(header="X-Signature")
    secret = "plain-secret-22"
    digest = hmac.new(secret.encode(), BODY, hashlib.sha256).hexdigest()
    assert check(Scheme.HMAC, {"X-Signature": digest}, secrets=(secret,), options=options) is None
    upper = {"X-Signature": digest.upper()}  # hex is hex, in either case
    assert check(Scheme.HMAC, upper, secrets=(secret,), options=options) is None
    bad = {"X-Signature": "zz" + digest[2:]}
    assert check(Scheme.HMAC, bad, secrets=(secret,), options=options) == Refusal.BAD_SIGNATURE


def test_a_forgery_is_a_bad_signature_whatever_its_timestamp() -> None:
    stale_forgery = stripe_headers(WRONG, NOW - 3600)
    assert check(Scheme.STRIPE, stale_forgery) == Refusal.BAD_SIGNATURE
    assert check(Scheme.STANDARD, standard_headers(WRONG, NOW + 3600)) == Refusal.BAD_SIGNATURE
