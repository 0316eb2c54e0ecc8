"""A declared function: its handler, its options, and its config as registered (§4.2)."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, cast

from weir.sdk._declaring import options
from weir.sdk._declaring.problems import Problems
from weir.sdk._declaring.scopes import Scope, scopes_wire
from weir.sdk._declaring.triggers import Trigger, TriggerCron, TriggerEvent

FAILED_EVENT = "inngest/function.failed"
MAX_TRIGGERS = 10
MAX_CONCURRENCY = 2
MAX_CANCEL = 5
MAX_RETRIES = 20
MAX_ROLLING_WINDOWS = 8


class _Option(Protocol):
    def to_wire(self, p: Problems, option: str) -> options.Wire: ...


@dataclass(frozen=True)
class FunctionOptions:
    """Everything the decorator accepts besides the handler."""

    id: str
    name: str | None = None
    event: str | None = None  # shorthand for TriggerEvent(event, expression)
    expression: str | None = None
    cron: str | None = None  # shorthand for TriggerCron(cron)
    triggers: tuple[Trigger, ...] = ()
    retries: int | None = None
    concurrency: tuple[options.Concurrency, ...] = ()
    throttle: options.Throttle | None = None
    rate_limit: options.RateLimit | None = None
    debounce: options.Debounce | None = None
    batch_events: options.Batch | None = None
    priority: options.Priority | None = None
    idempotency: str | None = None
    singleton: options.Singleton | None = None
    cancel_on: tuple[options.Cancel, ...] = ()
    timeouts: options.Timeouts | None = None
    rolling_window: tuple[options.RollingWindow, ...] = ()
    on_failure: Callable[..., Any] | None = None
    lane: options.Lane | None = None  # Weir only: sent in the config's "weir" block
    scopes: tuple[Scope, ...] = ()  # Weir-only: resource scopes (docs/sdk.md)
    app_limit: int | None = None  # Weir-only: slots shared by the app's functions
    checkpoint: options.Checkpoint | None = None  # Weir-only, SDK side: steps run on in one request


@dataclass(frozen=True)
class Compiled:
    """One registrable function: its slug, handler and config without the runtime URL."""

    slug: str
    handler: Callable[..., Any]
    config: options.Wire
    retries: int | None = None
    checkpoint: options.Checkpoint | None = None

    @property
    def is_async(self) -> bool:
        return inspect.iscoroutinefunction(self.handler)

    def registered(self, app_url: str) -> options.Wire:
        """The FunctionConfig with its single step pointing back at this app."""
        step: options.Wire = {"id": "step", "name": "step"}
        if self.retries is not None:
            step["retries"] = {"attempts": self.retries}
        kind = "ws" if app_url.startswith("wss://") else "http"
        step["runtime"] = {"type": kind, "url": f"{app_url}?fnId={self.slug}&stepId=step"}
        return {**self.config, "steps": {"step": step}}


class Function:
    """A durable function declared with `Weir.function`; still callable as plain code."""

    def __init__(self, app_id: str, options: FunctionOptions, handler: Callable[..., Any]):
        self.app_id = app_id
        self.options = options
        self.handler = handler

    @property
    def id(self) -> str:
        return self.options.id

    @property
    def slug(self) -> str:
        return f"{self.app_id}-{self.options.id}"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.handler(*args, **kwargs)

    def compile(self, sink: list[str]) -> list[Compiled]:
        """Check every option (problems go to `sink`) and build the registered configs."""
        p = Problems(self.options.id, sink)
        _check_identity(p, self.options, self.handler)
        config: options.Wire = {"id": self.slug, "name": self.options.name or self.options.id}
        config["triggers"] = _triggers(p, self.options)
        config.update(_flow_control(p, self.options))
        weir = _weir_block(p, self.options)
        if weir:
            config["weir"] = weir
        _check_exclusive(p, self.options)
        checkpoint = _checkpoint(p, self.options.checkpoint)
        main = Compiled(self.slug, self.handler, config, self.options.retries, checkpoint)
        if self.options.on_failure is None:
            return [main]
        return [main, self._failure_handler(self.options.on_failure)]

    def _failure_handler(self, handler: Callable[..., Any]) -> Compiled:
        # Registered as its own function, triggered by the failure event of this one (§4.2).
        slug = f"{self.slug}-failure"
        trigger = {"event": FAILED_EVENT, "expression": f"event.data.function_id == '{self.slug}'"}
        config = {
            "id": slug,
            "name": f"{self.options.name or self.options.id} (failure)",
            "triggers": [trigger],
            "cancel": [],
            "concurrency": [],
        }
        return Compiled(slug, handler, config, retries=0)


def _check_identity(p: Problems, o: FunctionOptions, handler: Callable[..., Any]) -> None:
    ok_id = isinstance(o.id, str) and o.id != "" and not any(c.isspace() for c in o.id)
    p.check(ok_id, "id", f"must be a non-empty string without spaces, got {o.id!r}")
    p.check(callable(handler), "handler", "must be a function taking the context")
    p.check(
        o.on_failure is None or callable(o.on_failure),
        "on_failure",
        "must be a function taking the context",
    )
    retries_ok = o.retries is None or (
        isinstance(o.retries, int)
        and not isinstance(o.retries, bool)
        and 0 <= o.retries <= MAX_RETRIES
    )
    p.check(retries_ok, "retries", f"must be an integer from 0 to {MAX_RETRIES}, got {o.retries!r}")


def _checkpoint(p: Problems, value: object) -> options.Checkpoint | None:
    if value is None:
        return None
    if not isinstance(value, options.Checkpoint):
        p.add("checkpoint", f"must be True or a Checkpoint(...), got {value!r}")
        return None
    value.check(p, "checkpoint")
    return value


def _all_triggers(p: Problems, o: FunctionOptions) -> list[object]:
    triggers: list[object] = []
    if o.event is not None:
        triggers.append(TriggerEvent(o.event, o.expression))
    elif o.expression is not None:
        p.add("expression", "needs event= (it filters that event trigger)")
    if o.cron is not None:
        triggers.append(TriggerCron(o.cron))
    return [*triggers, *o.triggers]


def _triggers(p: Problems, o: FunctionOptions) -> list[options.Wire]:
    triggers = _all_triggers(p, o)
    count = len(triggers)
    p.check(
        1 <= count <= MAX_TRIGGERS,
        "triggers",
        f"needs 1 to {MAX_TRIGGERS} triggers (event=, cron= or triggers=), got {count}",
    )
    wires = []
    for i, trigger in enumerate(triggers):
        if not isinstance(trigger, TriggerEvent | TriggerCron):
            p.add(f"triggers[{i}]", f"must be TriggerEvent or TriggerCron, got {trigger!r}")
            continue
        wires.append(trigger.to_wire(p, f"triggers[{i}]"))
    p.check(len({repr(w) for w in wires}) == len(wires), "triggers", "has duplicate triggers")
    return wires


def _flow_control(p: Problems, o: FunctionOptions) -> options.Wire:
    out: options.Wire = {}
    p.check(
        len(o.concurrency) <= MAX_CONCURRENCY,
        "concurrency",
        f"allows at most {MAX_CONCURRENCY} limits, got {len(o.concurrency)}",
    )
    if o.concurrency:
        out["concurrency"] = _each(p, "concurrency", o.concurrency, options.Concurrency)
    p.check(
        len(o.cancel_on) <= MAX_CANCEL,
        "cancel_on",
        f"allows at most {MAX_CANCEL} entries, got {len(o.cancel_on)}",
    )
    if o.cancel_on:
        out["cancel"] = _each(p, "cancel_on", o.cancel_on, options.Cancel)
    singles: Sequence[tuple[str, str, Any, type]] = (
        ("throttle", "throttle", o.throttle, options.Throttle),
        ("rate_limit", "rateLimit", o.rate_limit, options.RateLimit),
        ("debounce", "debounce", o.debounce, options.Debounce),
        ("batch_events", "batchEvents", o.batch_events, options.Batch),
        ("priority", "priority", o.priority, options.Priority),
        ("singleton", "singleton", o.singleton, options.Singleton),
        ("timeouts", "timeouts", o.timeouts, options.Timeouts),
    )
    for option, key, value, kind in singles:
        if value is not None:
            out[key] = _one(p, option, value, kind)
    if o.idempotency is not None:
        ok = isinstance(o.idempotency, str) and o.idempotency.strip() != ""
        p.check(ok, "idempotency", "must be a non-empty CEL expression string")
        out["idempotency"] = o.idempotency
    return out


def _weir_block(p: Problems, o: FunctionOptions) -> options.Wire:
    """Weir's own options, which the official SDK has no slot for (docs/sdk.md)."""
    block: options.Wire = {}
    if o.lane is not None:
        block["lane"] = _one(p, "lane", o.lane, options.Lane)
    _rolling_windows(p, o, block)
    block.update(scopes_wire(p, o.scopes, o.app_limit))
    return block


def _rolling_windows(p: Problems, o: FunctionOptions, block: options.Wire) -> None:
    # Weir-only: sent in the function's "weir" block (docs/sdk.md).
    count = len(o.rolling_window)
    p.check(
        count <= MAX_ROLLING_WINDOWS,
        "rolling_window",
        f"allows at most {MAX_ROLLING_WINDOWS} windows, got {count}",
    )
    if count:
        windows = _each(p, "rolling_window", o.rolling_window, options.RollingWindow)
        block["rollingWindows"] = windows


def _one(p: Problems, option: str, value: Any, kind: type) -> options.Wire | None:
    if not isinstance(value, kind):
        p.add(option, f"must be a {kind.__name__}(...), got {value!r}")
        return None
    return cast(_Option, value).to_wire(p, option)


def _each(p: Problems, option: str, values: Sequence[Any], kind: type) -> list[options.Wire | None]:
    return [_one(p, f"{option}[{i}]", v, kind) for i, v in enumerate(values)]


def _check_exclusive(p: Problems, o: FunctionOptions) -> None:
    # Batched runs have no single triggering event to key these on (docs/semantics.md).
    if o.batch_events is None:
        return
    clashes = {
        "cancel_on": bool(o.cancel_on),
        "debounce": o.debounce is not None,
        "singleton": o.singleton is not None,
        "priority": o.priority is not None,
    }
    for option, present in clashes.items():
        p.check(not present, "batch_events", f"cannot be combined with {option}")
