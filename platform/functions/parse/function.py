"""Reading one function of a sync: identity, its single HTTP step, retries and options."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from weir.platform.foundation.jsonvalues import control_char
from weir.platform.functions.config import DEFAULT_RETRIES, MAX_RETRIES, FunctionConfig
from weir.platform.functions.connect_url import is_connect_url
from weir.platform.functions.parse import lane, options, rolling_windows, scopes, weir_block
from weir.platform.functions.parse.fields import read_int, read_object, read_text, refuse
from weir.platform.functions.parse.triggers import read_triggers
from weir.platform.functions.problems import Issues

MAX_ID = 255  # a function's id (slug) and name, as the store keeps them

# Batching gathers events before a run exists, so options that act per run at admission
# cannot apply to it (docs/semantics.md, Batching); Inngest refuses these pairs at sync too.
_NOT_WITH_BATCHING = {
    "cancel": "cancel-on",
    "debounce": "debounce",
    "singleton": "singleton",
    "priority": "priority",
}


def function_label(value: Any, index: int) -> str:
    """How problems name a function: its id, or its place in the list when it has none."""
    if isinstance(value, Mapping) and isinstance(value.get("id"), str) and value["id"]:
        return str(value["id"])
    return f"functions[{index}]"


def read_function(issues: Issues, value: Any) -> FunctionConfig | None:
    """The function's config, or None when any problem was recorded for it."""
    item = read_object(issues, value, None)
    if item is None:
        return None
    before = len(issues.found)
    config = _build(issues, item)
    _check_batching_combinations(issues, item)
    return config if len(issues.found) == before else None


def _build(issues: Issues, item: Mapping[str, Any]) -> FunctionConfig:
    step = _read_step(issues, item.get("steps"))
    url, in_url = weir_block.split_url(_read_url(issues, step))
    weir = weir_block.read_block(issues, item, in_url)
    return FunctionConfig(
        slug=read_text(issues, item.get("id"), "id", MAX_ID) or "",
        name=read_text(issues, item.get("name"), "name", MAX_ID) or "",
        url=url,
        retries=_read_retries(issues, step),
        triggers=read_triggers(issues, item.get("triggers")),
        concurrency=options.read_concurrency(issues, item.get("concurrency")),
        throttle=options.read_throttle(issues, item.get("throttle")),
        rate_limit=options.read_rate_limit(issues, item.get("rateLimit")),
        debounce=options.read_debounce(issues, item.get("debounce")),
        batching=options.read_batching(issues, item.get("batchEvents")),
        singleton=options.read_singleton(issues, item.get("singleton")),
        idempotency=options.read_idempotency(issues, item.get("idempotency")),
        priority_run=options.read_priority_run(issues, item.get("priority")),
        cancel_on=options.read_cancel_on(issues, item.get("cancel")),
        timeouts=options.read_timeouts(issues, item.get("timeouts")),
        lane=lane.read_lane(issues, weir.get("lane")),
        rolling_windows=rolling_windows.read(issues, weir),
        scopes=scopes.read_scopes(issues, weir),
        app_limit=scopes.read_app_limit(issues, weir),
        raw=copy.deepcopy(dict(item)),
    )


def _read_step(issues: Issues, value: Any) -> Mapping[str, Any] | None:
    steps = read_object(issues, value, "steps")
    if steps is None:
        return None
    if len(steps) != 1:
        issues.add("steps", f"must hold exactly one step (keyed 'step'), got {len(steps)}")
        return None
    key, step = next(iter(steps.items()))
    return read_object(issues, step, f"steps.{key}")


def _read_url(issues: Issues, step: Mapping[str, Any] | None) -> str:
    if step is None:
        return ""
    runtime = read_object(issues, step.get("runtime"), "steps.step.runtime")
    url = None if runtime is None else runtime.get("url")
    if runtime is not None and not (is_http_url(url) or is_connect_url(url)):
        refuse(issues, "steps.step.runtime.url", "an http:// or https:// URL", url)
    return url if isinstance(url, str) else ""


def is_http_url(value: Any) -> bool:
    if not isinstance(value, str) or control_char(value) or " " in value:
        return False  # urlsplit would quietly drop a tab or newline, and keep a NUL
    try:
        parts = urlsplit(value)
        return parts.scheme in ("http", "https") and bool(parts.hostname)
    except ValueError:  # e.g. "http://[::1": an unclosed IPv6 address
        return False


def _read_retries(issues: Issues, step: Mapping[str, Any] | None) -> int:
    retries = None if step is None else step.get("retries")
    if retries is None:
        return DEFAULT_RETRIES
    policy = read_object(issues, retries, "steps.step.retries")
    attempts = None if policy is None else policy.get("attempts")
    if attempts is None:
        return DEFAULT_RETRIES
    # Inngest caps retries at 20 without complaint; only a negative count is an error.
    counted = read_int(issues, attempts, "steps.step.retries.attempts", 0)
    return DEFAULT_RETRIES if counted is None else min(counted, MAX_RETRIES)


def _check_batching_combinations(issues: Issues, item: Mapping[str, Any]) -> None:
    if item.get("batchEvents") is None:
        return
    for option, label in _NOT_WITH_BATCHING.items():
        if _is_set(option, item.get(option)):
            issues.add(option, f"{label} cannot be combined with batching (batchEvents)")


def _is_set(option: str, value: Any) -> bool:
    if option == "priority":
        return isinstance(value, Mapping) and value.get("run") not in (None, "")
    return value not in (None, [], {})
