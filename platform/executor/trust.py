"""Verifying that an answer came from the app, for this request (docs/protocol.md §12.2).

In start mode every response must carry `X-Inngest-Signature`, an HMAC with one of Weir's
signing keys over the raw body and its time: anything else on the path to the app (a proxy,
a spoofed host) cannot make a run complete, fail or take a step. A 401 is the app refusing
*our* signature and is left for `classify` to explain.

What the signature can bind depends on the SDK. The official SDK signs only the body and the
time, so its answer is bound to nothing but a time: Weir refuses one signed more than
WINDOW_S before the request was sent (or after it arrived, clocks apart), so an old answer
cannot be replayed — one of the last five minutes, from the same function, still could.
weir.sdk (registered as `weir-…`) also signs the request's own signature into
`X-Weir-Signature`, which Weir then requires: its answers count for exactly the request
(run, step, attempt and state) they were made for.
"""

from weir.platform.executor import signing
from weir.platform.executor.response import AttemptFailed, RawResponse, failed
from weir.platform.foundation.record_type import record

WINDOW_S = 300  # as Inngest's own signature checks: five minutes either way


@record
class Sent:
    """What an answer is checked against: the request as Weir sent it."""

    signature: str  # the request's X-Inngest-Signature ("" when unsigned)
    at_s: int  # when it was sent, unix seconds
    bound: bool  # the app binds its answers to their requests (weir.sdk)


def binds_answers(sdk: str) -> bool:
    """Whether an app registered with this `sdk` text signs X-Weir-Signature."""
    return sdk.startswith("weir-")


def unverified(
    raw: RawResponse, keys: tuple[str, ...], sent: Sent, now_s: int
) -> AttemptFailed | None:
    """None if the response is trusted (or no keys are required), else the failed attempt."""
    if not keys or raw.status == 401:
        return None
    header = raw.headers.get("x-inngest-signature", "")
    t = signing.signed_at(raw.body, header, list(keys)) if header else None
    if t is None:
        why = "has a signature no key matches" if header else "has no X-Inngest-Signature header"
        return _refused(
            raw,
            f"{why}: in start mode Weir accepts only answers signed with its signing key, so "
            "the app must run in cloud mode (INNGEST_SIGNING_KEY / WEIR_SIGNING_KEY set to "
            "Weir's key, INNGEST_DEV unset)",
        )
    if not sent.at_s - WINDOW_S <= t <= now_s + WINDOW_S:
        return _refused(
            raw,
            f"was signed at {t} (unix seconds) but the request was sent at {sent.at_s}: more "
            f"than {WINDOW_S} s apart, so it is an old answer replayed (or the app's clock is "
            "that far off)",
        )
    if sent.bound and not _bound(raw, keys, sent):
        return _refused(
            raw,
            "has no X-Weir-Signature binding it to this request: an answer to another request "
            "replayed (weir.sdk binds every answer it signs to its request)",
        )
    return None


def _bound(raw: RawResponse, keys: tuple[str, ...], sent: Sent) -> bool:
    ours = signing.parse(sent.signature)
    header = raw.headers.get(signing.BOUND_HEADER, "")
    return ours is not None and signing.bound_to(raw.body, header, list(keys), ours[1])


def _refused(raw: RawResponse, why: str) -> AttemptFailed:
    return failed(
        "InvalidSignature", f"the app's HTTP {raw.status} response {why}", status=raw.status
    )
