"""Typed, immutable function configs: what the platform keeps from an app's sync.

Every option is stored in the platform's own units (milliseconds, folded expressions), so
the gates never re-read the wire format. `raw` keeps the config as received, for display. A
gate whose algorithm takes a config of its own declares it once, in `weir.platform.gates`
(throttle, rate limit, debounce, batching, timeouts): the function config holds that type
itself, under the option's name, and the gate is handed it as it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Literal, TypeVar

from weir.platform.gates.batching import BatchConfig
from weir.platform.gates.debounce import DebounceConfig
from weir.platform.gates.rate_limit import RateLimitConfig
from weir.platform.gates.throttle import ThrottleConfig
from weir.platform.gates.timeouts import TimeoutConfig

# The options whose gates take a config of their own, under the options' names.
Batching = BatchConfig
Debounce = DebounceConfig
RateLimit = RateLimitConfig
Throttle = ThrottleConfig
Timeouts = TimeoutConfig

DEFAULT_RETRIES = 4
MAX_RETRIES = 20


@dataclass(frozen=True)
class EventTrigger:
    event: str
    expression: str | None


@dataclass(frozen=True)
class CronTrigger:
    cron: str  # the five fields, without any TZ= prefix
    timezone: str | None
    jitter_ms: int


Trigger = EventTrigger | CronTrigger


@dataclass(frozen=True)
class ConcurrencyLimit:
    limit: int  # 0 means no limit
    key: str | None
    scope: Literal["fn", "env", "account"]


@dataclass(frozen=True)
class ScopeLimit:
    """A resource scope (weir.scopes): `limit` slots per evaluated key, or one set if no key."""

    limit: int
    name: str | None  # shared by every function naming it, across apps
    key: str | None  # a CEL expression over `event`


@dataclass(frozen=True)
class RollingWindow:
    """At most `limit` run starts in any `window_ms` ending now; `rate_name` shares the
    budget with every function naming the same meter (weir block `rollingWindows`)."""

    limit: int
    window_ms: int
    key: str | None
    rate_name: str | None = None


@dataclass(frozen=True)
class Singleton:
    mode: Literal["skip", "cancel"]
    key: str | None


@dataclass(frozen=True)
class CancelOn:
    event: str
    if_expr: str | None  # a `match` is already folded in (event.data.x == async.data.x)
    timeout_ms: int | None


@dataclass(frozen=True)
class Lane:
    """A FIFO lane (Weir only): one run per lane at a time, in admission order. `name` shares
    the lanes with every function naming it; without one they are the function's own."""

    key: str | None
    name: str | None


@dataclass(frozen=True)
class FunctionConfig:
    slug: str
    name: str
    url: str  # the step runtime URL (?fnId=<slug>&stepId=step)
    retries: int
    triggers: tuple[Trigger, ...]
    concurrency: tuple[ConcurrencyLimit, ...] = ()
    throttle: Throttle | None = None
    rate_limit: RateLimit | None = None
    debounce: Debounce | None = None
    batching: Batching | None = None
    singleton: Singleton | None = None
    idempotency: str | None = None
    priority_run: str | None = None
    cancel_on: tuple[CancelOn, ...] = ()
    timeouts: Timeouts | None = None
    lane: Lane | None = None
    rolling_windows: tuple[RollingWindow, ...] = ()
    scopes: tuple[ScopeLimit, ...] = ()  # Weir-only (functions/parse/scopes.py)
    app_limit: int | None = None  # Weir-only: slots shared by the app's functions declaring it
    # A plain dict so it stays JSON-serialisable; left out of the hash since dicts have none.
    raw: Mapping[str, Any] = field(default_factory=dict, hash=False)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict that `from_json` turns back into an equal config."""
        data = {item.name: getattr(self, item.name) for item in fields(self)}
        data["triggers"] = [_trigger_to_json(trigger) for trigger in self.triggers]
        data["concurrency"] = [_plain(limit) for limit in self.concurrency]
        data["cancel_on"] = [_plain(cancel) for cancel in self.cancel_on]
        data["rolling_windows"] = [_plain(window) for window in self.rolling_windows]
        data["scopes"] = [_plain(scope) for scope in self.scopes]
        for name in _OPTION_TYPES:
            data[name] = _plain_or_none(getattr(self, name))
        data["raw"] = dict(self.raw)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> FunctionConfig:
        """Rebuild a config stored with `to_json`."""
        values = dict(data)
        values["triggers"] = tuple(_trigger_from_json(item) for item in data["triggers"])
        values["concurrency"] = tuple(ConcurrencyLimit(**item) for item in data["concurrency"])
        values["cancel_on"] = tuple(CancelOn(**item) for item in data["cancel_on"])
        windows = data.get("rolling_windows", ())  # configs stored before windows existed
        values["rolling_windows"] = tuple(RollingWindow(**item) for item in windows)
        values["scopes"] = tuple(ScopeLimit(**item) for item in data.get("scopes", []))
        for name, option_type in _OPTION_TYPES.items():
            values[name] = _build_or_none(option_type, data.get(name))
        return cls(**values)


@dataclass(frozen=True)
class AppSync:
    app_name: str
    url: str
    sdk: str
    framework: str | None
    app_version: str | None
    functions: tuple[FunctionConfig, ...]
    checksum: str  # sha256 of the payload's canonical JSON: an unchanged re-sync is a no-op


_OPTION_TYPES: dict[str, type[Any]] = {
    "throttle": Throttle,
    "rate_limit": RateLimit,
    "debounce": Debounce,
    "batching": Batching,
    "singleton": Singleton,
    "timeouts": Timeouts,
    "lane": Lane,
}
_Option = TypeVar("_Option")


def _plain(option: object) -> dict[str, Any]:
    return {item.name: getattr(option, item.name) for item in fields(option)}  # type: ignore[arg-type]


def _plain_or_none(option: object | None) -> dict[str, Any] | None:
    return None if option is None else _plain(option)


def _build_or_none(option_type: type[_Option], data: Mapping[str, Any] | None) -> _Option | None:
    return None if data is None else option_type(**data)


def _trigger_to_json(trigger: Trigger) -> dict[str, Any]:
    kind = "cron" if isinstance(trigger, CronTrigger) else "event"
    return {"kind": kind, **_plain(trigger)}


def _trigger_from_json(data: Mapping[str, Any]) -> Trigger:
    values = {key: value for key, value in data.items() if key != "kind"}
    return CronTrigger(**values) if data["kind"] == "cron" else EventTrigger(**values)
