"""Verifying that an answer came from the app, for this request (docs/protocol.md §12.2).

In start mode every response must carry `X-Inngest-Signature`, an HMAC with one of Weir's
signing keys over the raw body and its time: anything else on the path to the app (a proxy,
a spoofed host) cannot make a run complete, fail or take a step. A 401 is the app refusing
*our* signature and is left for `classify` to explain.

What the signature can bind depends on the SDK. weir.sdk (registered as `weir-…`) also signs
the request's own signature into `X-Weir-Signature`, which Weir then requires: its answers
count for exactly the request (run, step, attempt and state) they were made for.

The official SDK signs only the body and the time, and its body names no run, request or
attempt. So Weir binds what the request lets it check (`misplaced`):
- time: an answer signed more than WINDOW_S before the request was sent (or after it arrived,
  clocks apart) is refused;
- the targeted step: an answer to a request for one planned step must be about that step;
- the run's progress: an answer to a discovery request may not report a step the request
  already carried as done (the SDK replays those, it never reports them again).
What remains: within the five minutes, a signed answer of one request can still be accepted
for another request at the same point of a run of a function with the same step ids: a
function's return value (200) or error (500) for any discovery request, a step's result for a
run that has not yet done that step. Only the transport can close that (TLS to the app, or
weir.sdk).
"""

from collections.abc import Callable

from weir.platform.executor import signing
from weir.platform.executor.response import (
    AttemptFailed,
    Checkpointed,
    Op,
    Ops,
    Outcome,
    RawResponse,
    failed,
)
from weir.platform.foundation.record_type import record

WINDOW_S = 300  # as Inngest's own signature checks: five minutes either way
DISCOVERY = "step"


@record
class Sent:
    """What an answer is checked against: the request as Weir sent it."""

    signature: str  # the request's X-Inngest-Signature ("" when unsigned)
    at_s: int  # when it was sent, unix seconds
    bound: bool  # the app binds its answers to their requests (weir.sdk)
    step_id: str = DISCOVERY  # the step the request targets ("step": run from the top)


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


def misplaced(outcome: Outcome, sent: Sent, done: Callable[[], set[str]]) -> AttemptFailed | None:
    """An unbound answer's ops checked against the request (`done`: the step ids it carried
    as done, asked for only when needed); None if they could answer it."""
    ops = _ops_of(outcome)
    if not ops:
        return None
    if sent.step_id != DISCOVERY:
        other = next((o for o in ops if o.id != sent.step_id), None)
        if other is not None:
            return _replayed(
                f"reports step {_named(other)}, but the request targeted step {sent.step_id}"
            )
        return None
    finished = done()
    again = next((o for o in ops if o.id in finished), None)
    if again is not None:
        return _replayed(f"reports step {_named(again)}, which the request carried as done")
    return None


def _ops_of(outcome: Outcome) -> list[Op]:
    if isinstance(outcome, Ops):
        return outcome.ops
    if isinstance(outcome, Checkpointed):
        return outcome.steps + (outcome.then.ops if isinstance(outcome.then, Ops) else [])
    return []


def _named(op: Op) -> str:
    return f"{op.display_name!r} ({op.op} {op.id})" if op.display_name else f"{op.id} ({op.op})"


def _replayed(why: str) -> AttemptFailed:
    return failed(
        "ReplayedAnswer",
        f"the app's answer {why}: it answers another request (replayed, or the app's code "
        "took another path than the run's saved steps)",
    )
