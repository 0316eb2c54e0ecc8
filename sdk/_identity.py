"""How this SDK names itself on the wire (§3)."""

from __future__ import annotations

from weir.sdk._declaring.config import Settings

VERSION = "0.1.0"
SDK_HEADER = f"weir-py:v{VERSION}"  # header form: `<sdk>-<language>:v<version>`
# The register body's `sdk`. Not the official `<language>:v<version>`: the `weir-` prefix
# tells Weir that this SDK binds its signed answers to their requests (X-Weir-Signature).
SDK_REGISTER = SDK_HEADER
REQ_VERSION = "2"  # step-id hashing / request version this SDK speaks


def outgoing_headers(settings: Settings) -> dict[str, str]:
    """Headers on every request the SDK makes (register, send, use_api)."""
    headers = {
        "content-type": "application/json",
        "x-inngest-sdk": SDK_HEADER,
        "user-agent": SDK_HEADER,
        "x-inngest-req-version": REQ_VERSION,
    }
    if settings.env:
        headers["x-inngest-env"] = settings.env
    return headers
