"""Weir's own options and fencing tokens for apps built with the official `inngest` SDK.

The official SDK's function config has no slot for options it does not know (it drops them),
so `weir_options` carries Weir's `weir` block, as compact JSON, in the `weir` query parameter
of the function's step URL; Weir reads it at sync and calls the function without it:

    @weir_options(lane="event.data.customer")
    @client.create_function(fn_id="charge", trigger=inngest.TriggerEvent(event="shop/charge"))
    async def charge(ctx: inngest.Context) -> None:
        token = fence(ctx)  # the lane's fencing token

Nothing here imports `inngest`: it works on the function object the SDK's decorator returns.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping
from typing import Any, TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from weir.sdk._declaring.options import Lane
from weir.sdk._declaring.problems import Problems, raise_if_any
from weir.sdk._errors import InvalidFunctionsError
from weir.sdk._errors import NoFencingToken as NoFencingToken  # raised by `fence`

URL_PARAM = "weir"
F = TypeVar("F")


def weir_options(
    block: Mapping[str, Any] | None = None, *, lane: Lane | str | None = None
) -> Callable[[F], F]:
    """Attach Weir-only options to an official-SDK function (put it above
    `@client.create_function`). `block` is the `weir` object as docs/sdk.md describes it,
    passed through as given (Weir checks it at sync); `lane=` builds its `lane` entry."""
    wire = dict(block or {})
    if lane is not None:
        problems: list[str] = []
        lane_option = Lane(key=lane) if isinstance(lane, str) else lane
        wire["lane"] = lane_option.to_wire(Problems("weir_options", problems), "lane")
        raise_if_any(problems)
    try:
        text = json.dumps(wire, separators=(",", ":"), sort_keys=True)
    except (TypeError, ValueError) as error:
        raise InvalidFunctionsError([f"weir_options: the block must be JSON: {error}"]) from None

    def attach(fn: F) -> F:
        original = getattr(fn, "get_config", None)
        if original is None:
            raise TypeError(f"weir_options decorates an inngest function, got {fn!r}")

        def get_config(app_url: str) -> Any:
            config = original(app_url)
            main = config.main
            steps = {key: _with_block(step, text) for key, step in main.steps.items()}
            return dataclasses.replace(config, main=main.model_copy(update={"steps": steps}))

        fn.get_config = get_config  # type: ignore[attr-defined]  # shadows the SDK's method
        return fn

    return attach


def _with_block(step: Any, text: str) -> Any:
    runtime = step.runtime
    parts = urlsplit(runtime.url)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != URL_PARAM]
    url = urlunsplit(parts._replace(query=urlencode([*query, (URL_PARAM, text)])))
    return step.model_copy(update={"runtime": runtime.model_copy(update={"url": url})})


def fences(job_id: str | None) -> dict[str, int]:
    """The fencing tokens in a job id Weir sent (`<job id>;lane=7`), by scope: those this call
    holds (see `fence`)."""
    tokens: dict[str, int] = {}
    for part in (job_id or "").split(";")[1:]:
        scope, _, value = part.partition("=")
        if scope and value.isdigit():
            tokens[scope] = int(value)
    return tokens


def fence(ctx: Any, scope: str = "lane") -> int:
    """The fencing token of `scope` this call holds, read from the official SDK's `ctx.job_id`.

    `lane`: held by a run of a function with a lane, the same for its whole life.
    `concurrency0` (`concurrency1` for a second limit): held by one call, taken when it was
    claimed while that key's live capacity was 1; each call takes a new one, and a call
    claimed under a larger capacity (an operator raised it) holds none. Raises NoFencingToken
    (a LookupError) for a scope the call does not hold, saying why;
    `fences(ctx.job_id).get(scope)` is None instead."""
    found = fences(getattr(ctx, "job_id", None))
    if scope not in found:
        raise NoFencingToken(scope, list(found), f"fences(ctx.job_id).get({scope!r})")
    return found[scope]
