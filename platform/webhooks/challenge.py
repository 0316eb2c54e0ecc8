"""A provider's one-time check of a new URL, answered in place of an event: Slack's Events API
sends a signed `{"type": "url_verification", "challenge": ...}` and expects the challenge back
before it sends any event."""

import json
from typing import Any

from weir.platform.webhooks.delivery import Received
from weir.platform.webhooks.verify.schemes import Scheme

MAX_CHALLENGE = 1024


def answer_to(scheme: Scheme, received: Received) -> dict[str, Any] | None:
    """The answer a (verified) URL check expects, or None for an ordinary delivery."""
    if scheme != Scheme.SLACK or len(received.body) > 4 * MAX_CHALLENGE:
        return None
    try:
        body = json.loads(received.body)
    except ValueError:
        return None
    if not isinstance(body, dict) or body.get("type") != "url_verification":
        return None
    challenge = body.get("challenge")
    if not isinstance(challenge, str) or len(challenge) > MAX_CHALLENGE:
        return None
    return {"challenge": challenge}
