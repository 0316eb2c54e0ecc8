"""What a refused signature check says, and the checks every scheme shares: constant-time
comparison against each of a source's secrets, and a timestamp within the tolerance."""

import hmac
from collections.abc import Iterable
from enum import StrEnum


class Refusal(StrEnum):
    MISSING_SIGNATURE = "missing_signature"  # the scheme's header(s) absent or malformed
    BAD_SIGNATURE = "bad_signature"  # no signature matches any secret
    STALE_TIMESTAMP = "stale_timestamp"  # older than the tolerance: a replay, or a slow queue
    FUTURE_TIMESTAMP = "future_timestamp"  # ahead by more than the tolerance


class VerificationFailed(Exception):
    def __init__(self, refusal: Refusal, message: str) -> None:
        super().__init__(message)
        self.refusal = refusal


def any_equal(expected: Iterable[bytes], presented: Iterable[bytes]) -> bool:
    """Whether any presented signature is one of the expected ones. Every pair is compared
    (constant time each, no early exit), so the time says nothing of which secret matched."""
    wanted = list(expected)
    found = False
    for candidate in presented:
        for one in wanted:
            found |= hmac.compare_digest(one, candidate)
    return found


def check_timestamp(sent_s: float, now_s: float, tolerance_s: int) -> None:
    """`sent_s` (Unix seconds, as the provider signed it) within `tolerance_s` of now. Checked
    once the signature holds: a stale timestamp then means a genuine delivery replayed or
    held up, and a forgery is always a bad signature, whatever its timestamp."""
    if sent_s < now_s - tolerance_s:
        raise VerificationFailed(
            Refusal.STALE_TIMESTAMP,
            f"the signed timestamp is {int(now_s - sent_s)} s old; at most {tolerance_s} s "
            "are allowed (a replayed or long-delayed delivery)",
        )
    if sent_s > now_s + tolerance_s:
        raise VerificationFailed(
            Refusal.FUTURE_TIMESTAMP,
            f"the signed timestamp is {int(sent_s - now_s)} s in the future; at most "
            f"{tolerance_s} s of clock skew are allowed",
        )


def unix_seconds(text: str | None, header: str) -> int:
    """A header of whole Unix seconds, or a refusal naming it."""
    value = (text or "").strip()
    if not value.isascii() or not value.isdigit() or len(value) > 16:
        raise VerificationFailed(
            Refusal.MISSING_SIGNATURE,
            f"the {header} header must be a whole Unix time, got {text!r}",
        )
    return int(value)


def missing(header: str) -> VerificationFailed:
    return VerificationFailed(Refusal.MISSING_SIGNATURE, f"the {header} header is missing")


def no_match(header: str) -> VerificationFailed:
    return VerificationFailed(
        Refusal.BAD_SIGNATURE,
        f"the {header} signature matches none of the source's secrets, over the body as sent",
    )
