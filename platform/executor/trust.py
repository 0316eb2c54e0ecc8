"""Verifying that an answer came from the app (docs/protocol.md §12.2).

In start mode every response must carry `X-Inngest-Signature`, an HMAC with one of Weir's
signing keys over the raw body: anything else on the path to the app (a proxy, a spoofed
host) cannot make a run complete, fail or take a step. A 401 is the app refusing *our*
signature and is left for `classify` to explain.
"""

from weir.platform.executor import signing
from weir.platform.executor.response import AttemptFailed, RawResponse, failed


def unverified(raw: RawResponse, keys: tuple[str, ...]) -> AttemptFailed | None:
    """None if the response is trusted (or no keys are required), else the failed attempt."""
    if not keys or raw.status == 401:
        return None
    header = raw.headers.get("x-inngest-signature", "")
    if header and signing.verify(raw.body, header, list(keys)):
        return None
    why = "has a signature no key matches" if header else "has no X-Inngest-Signature header"
    return failed(
        "InvalidSignature",
        f"the app's HTTP {raw.status} response {why}: in start mode Weir accepts only answers "
        "signed with its signing key, so the app must run in cloud mode "
        "(INNGEST_SIGNING_KEY / WEIR_SIGNING_KEY set to Weir's key, INNGEST_DEV unset)",
        status=raw.status,
    )
