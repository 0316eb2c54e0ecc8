"""A source's verification scheme: which provider module checks a delivery, its default
tolerance, and what a secret of that scheme must look like."""

from collections.abc import Mapping, Sequence
from enum import StrEnum

from weir.platform.webhooks.verify import generic, github, shopify, slack, standard, stripe
from weir.platform.webhooks.verify.generic import HmacOptions

MAX_TOLERANCE_S = 3600  # an hour: past it, a signed timestamp no longer stops a replay
MIN_SECRET = 8
MAX_SECRET = 512


class Scheme(StrEnum):
    STRIPE = "stripe"
    GITHUB = "github"
    STANDARD = "standard"  # Standard Webhooks, and Svix
    SLACK = "slack"
    SHOPIFY = "shopify"
    HMAC = "hmac"  # generic: HmacOptions


# 0: the scheme signs no timestamp (a replay is caught by the event id instead)
DEFAULT_TOLERANCE_S: dict[Scheme, int] = {
    Scheme.STRIPE: stripe.TOLERANCE_S,
    Scheme.GITHUB: 0,
    Scheme.STANDARD: standard.TOLERANCE_S,
    Scheme.SLACK: slack.TOLERANCE_S,
    Scheme.SHOPIFY: 0,
    Scheme.HMAC: generic.TOLERANCE_S,
}

_SIMPLE = {
    Scheme.STRIPE: stripe.verify,
    Scheme.GITHUB: github.verify,
    Scheme.STANDARD: standard.verify,
    Scheme.SLACK: slack.verify,
    Scheme.SHOPIFY: shopify.verify,
}


def signs_timestamp(scheme: Scheme, options: HmacOptions | None) -> bool:
    if scheme == Scheme.HMAC:
        return options is not None and options.timestamp_header is not None
    return DEFAULT_TOLERANCE_S[scheme] > 0


def verify(
    scheme: Scheme,
    options: HmacOptions | None,
    body: bytes,
    headers: Mapping[str, str],
    secrets: Sequence[str],
    now_s: float,
    tolerance_s: int,
) -> None:
    """Returns if the delivery is signed by one of `secrets`; else raises VerificationFailed.
    `headers` are keyed by lower-case name; `body` is the raw body as received."""
    if scheme == Scheme.HMAC:
        assert options is not None  # a source of the generic scheme always has its options
        generic.verify(options, body, headers, secrets, now_s, tolerance_s)
    else:
        _SIMPLE[scheme](body, headers, secrets, now_s, tolerance_s)


def secret_problem(scheme: Scheme, secret: str) -> str | None:
    if not MIN_SECRET <= len(secret) <= MAX_SECRET or not secret.isascii():
        return f"a secret is {MIN_SECRET} to {MAX_SECRET} ASCII characters"
    if scheme == Scheme.STANDARD:
        try:
            standard.key_of(secret)
        except ValueError as exc:
            return str(exc)
    return None
