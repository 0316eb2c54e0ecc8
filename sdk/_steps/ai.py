"""`ctx.step.ai.infer`: an AI model call that the server makes (the `AIGateway` op, §8.1).

The function stops at the step; the server POSTs `body` to `url` with the key in the header its
`format` implies (`x-api-key` for anthropic, `Authorization: Bearer` for openai-chat), saves
the response JSON as the step's result and calls the function again. A non-2xx answer is
retried like a failed step; once retries run out `infer` raises StepError.

Give either an `adapter` (the official SDK's `inngest.experimental.ai` adapters work: any
object with `auth_key()`, `format()`, `headers()`, `on_call(body)` and `url_infer()`) or the
`url`, `format`, `auth_key` and `headers` themselves.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from weir.sdk._steps.awaited import StepCall
from weir.sdk._steps.execution import RunState
from weir.sdk._steps.ops import AI_GATEWAY, Op, StepSlot

FORMATS = ("openai-chat", "anthropic", "gemini", "grok", "azure-openai", "bedrock")


class Adapter(Protocol):
    def auth_key(self) -> str: ...
    def format(self) -> str: ...
    def headers(self) -> dict[str, str]: ...
    def on_call(self, body: dict[str, object]) -> None: ...
    def url_infer(self) -> str: ...


def _opts(
    body: Mapping[str, Any],
    adapter: Adapter | None,
    url: str | None,
    format: str | None,
    auth_key: str | None,
    headers: Mapping[str, str] | None,
) -> dict[str, Any]:
    if not isinstance(body, Mapping):
        raise TypeError(f"step.ai.infer needs a JSON object body, got {type(body).__name__}")
    payload = dict(body)
    if adapter is not None:
        adapter.on_call(payload)
        url = url or adapter.url_infer()
        format = format or adapter.format()
        auth_key = auth_key if auth_key is not None else adapter.auth_key()
        headers = {**adapter.headers(), **(headers or {})}
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise ValueError(f"step.ai.infer needs an http(s) url (or an adapter), got {url!r}")
    return {
        "type": "step.ai.infer",
        "url": url,
        "body": payload,
        "headers": dict(headers or {}),
        "auth_key": auth_key or "",
        "format": format or "openai-chat",
    }


def _build(opts: dict[str, Any]) -> Callable[[StepSlot], Op]:
    return lambda slot: Op(AI_GATEWAY, slot, name=slot.user_id, opts=opts)


class AI:
    """`ctx.step.ai` of an async handler."""

    def __init__(self, state: RunState) -> None:
        self._state = state

    def infer(
        self,
        step_id: str,
        *,
        body: Mapping[str, Any],
        adapter: Adapter | None = None,
        url: str | None = None,
        format: str | None = None,
        auth_key: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> StepCall[Any]:
        """The model's response JSON, requested once by the server and memoized."""
        opts = _opts(body, adapter, url, format, auth_key, headers)

        async def step() -> Any:
            return self._state.report(step_id, _build(opts))

        return self._state.calls.track(step_id, step())


class AISync:
    """`ctx.step.ai` of a plain handler; same semantics as `AI`."""

    def __init__(self, state: RunState) -> None:
        self._state = state

    def infer(
        self,
        step_id: str,
        *,
        body: Mapping[str, Any],
        adapter: Adapter | None = None,
        url: str | None = None,
        format: str | None = None,
        auth_key: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Any:
        opts = _opts(body, adapter, url, format, auth_key, headers)
        return self._state.report(step_id, _build(opts))


__all__ = ["AI", "FORMATS", "AISync", "Adapter"]
