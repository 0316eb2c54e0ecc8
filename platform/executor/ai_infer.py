"""Making an `AIGateway` request (step.ai.infer) on a run's behalf, docs/protocol.md §8.1.

The same HTTP client as calls to apps, so the same rules: redirects are never followed, the
answer is read with a cap. Its own limits: at most AI_TIMEOUT_S per request, an answer of at
most a step's output size (4 MiB: it is saved as the step's result), and the hosts and
addresses of ai_hosts.py: a URL the policy lets through by name goes out on the apps' client;
any other on the guarded one, whose every connection is checked against the policy at the
address it is made to. The outcome says whether asking again may help.
"""

import json
from dataclasses import dataclass
from typing import Any

from weir.platform.executor import ai_hosts
from weir.platform.executor.ai_options import AIOptsError, parse_ai_opts, shown_url
from weir.platform.executor.answer_limits import MAX_STEP_OUTPUT_BYTES
from weir.platform.executor.http.client import AppClient, Redirected, TransportError
from weir.platform.foundation import jsonvalues
from weir.platform.foundation.record_type import record

AI_TIMEOUT_S = 600.0  # a long completion takes minutes; an app call may take hours


@record
class AIResult:
    """`data` (the answer's JSON) on success; otherwise `error`, and whether to retry."""

    data: Any = None
    error: dict[str, Any] | None = None
    retry: bool = False
    status: int = 0


def _error(name: str, message: str, *, retry: bool = False, status: int = 0) -> AIResult:
    return AIResult(error={"name": name, "message": message}, retry=retry, status=status)


@dataclass(frozen=True)
class ModelClients:
    """The clients model requests go out on, and the policy that picks one."""

    policy: ai_hosts.AIPolicy
    named: AppClient  # hosts the operator named, and weir dev: the apps' client
    guarded: AppClient  # every other host: built with ai_hosts.guard(policy)


def guarded_client(policy: ai_hosts.AIPolicy) -> AppClient:
    return AppClient(timeout_s=AI_TIMEOUT_S, socket_factory=ai_hosts.guard(policy))


async def infer(clients: ModelClients, opts: Any, timeout_s: float = AI_TIMEOUT_S) -> AIResult:
    try:
        req = parse_ai_opts(opts)
    except AIOptsError as exc:  # checked when the op arrived; kept against a stored bad item
        return _error("InvalidOp", str(exc))
    shown = shown_url(req.url)
    refused, guarded = ai_hosts.url_problem(clients.policy, shown)
    if refused:
        return _error("AIHostNotAllowed", refused)
    client = clients.guarded if guarded else clients.named
    body = json.dumps(req.body, separators=(",", ":")).encode()
    try:
        raw = await client.request("POST", req.url, body, req.headers, timeout_s=timeout_s)
    except Redirected as exc:
        return _error("Redirected", str(exc).replace(req.url, shown))
    except TransportError as exc:
        refusal = ai_hosts.refusal_in(exc)
        if refusal is not None:  # asking again reaches the same addresses
            return _error("AIHostNotAllowed", f"POST {shown} refused: {refusal}")
        text = str(exc).replace(req.url, shown)
        return _error("AIRequestFailed", f"POST {shown} failed: {text}", retry=True)
    if not 200 <= raw.status < 300:
        snippet = raw.body[:1000].decode("utf-8", "replace")
        return _error(
            "AIRequestFailed",
            f"POST {shown} answered HTTP {raw.status}: {snippet}",
            retry=True,
            status=raw.status,
        )
    if len(raw.body) > MAX_STEP_OUTPUT_BYTES:
        return _error(
            "StepOutputTooLarge",
            f"POST {shown} answered {len(raw.body)} bytes; a step's result may be at most "
            f"{MAX_STEP_OUTPUT_BYTES} bytes (4 MiB)",
            status=raw.status,
        )
    try:
        data = jsonvalues.loads(raw.body)
    except ValueError:
        return _error(
            "InvalidAIResponse",
            f"POST {shown} answered HTTP {raw.status} with a body that is not JSON",
        )
    unkeepable = jsonvalues.problem(data, "response")
    if unkeepable:
        return _error("InvalidAIResponse", f"POST {shown}: the answer's {unkeepable}")
    return AIResult(data=data, status=raw.status)
