"""`Weir`: the app's client. Declares functions and sends events."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Unpack

import httpx
from weir.sdk._declaring import options
from weir.sdk._declaring.config import SettingsArgs, resolve
from weir.sdk._declaring.function import Compiled, Function, FunctionOptions
from weir.sdk._declaring.problems import raise_if_any
from weir.sdk._declaring.scopes import Scope
from weir.sdk._declaring.triggers import Trigger
from weir.sdk._event import Event
from weir.sdk._sender import EventSender
from weir.sdk._serving.endpoint import AppSpec, Endpoint
from weir.sdk._steps.stepops import event_list

Handler = Callable[..., Any]


class Weir:
    """One app. Settings come from arguments, else `WEIR_*`, else `INNGEST_*` env vars."""

    def __init__(
        self,
        app_id: str,
        *,
        app_version: str | None = None,
        transport: httpx.MockTransport | None = None,
        app_limit: int | None = None,
        **settings: Unpack[SettingsArgs],
    ) -> None:
        if not isinstance(app_id, str) or not app_id.strip():
            raise ValueError(f"app_id must be a non-empty string, got {app_id!r}")
        self.app_id = app_id
        self.app_version = app_version
        self.app_limit = app_limit  # every function's default (docs/sdk.md, Scopes)
        self.settings = resolve(**settings)
        self.transport = transport  # for tests: route the SDK's own HTTP calls
        self._sender = EventSender(self.settings, transport)
        self.functions: list[Function] = []

    def function(
        self,
        id: str,
        *,
        name: str | None = None,
        event: str | None = None,
        expression: str | None = None,
        cron: str | None = None,
        triggers: Sequence[Trigger] = (),
        retries: int | None = None,
        concurrency: int | options.Concurrency | Sequence[options.Concurrency] | None = None,
        throttle: options.Throttle | None = None,
        rate_limit: options.RateLimit | None = None,
        debounce: options.Debounce | None = None,
        batch_events: options.Batch | None = None,
        priority: options.Priority | str | None = None,
        idempotency: str | None = None,
        singleton: options.Singleton | None = None,
        cancel_on: options.Cancel | Sequence[options.Cancel] | None = None,
        timeouts: options.Timeouts | None = None,
        rolling_window: options.RollingWindow | Sequence[options.RollingWindow] | None = None,
        on_failure: Handler | None = None,
        lane: options.Lane | str | None = None,
        scopes: Sequence[Scope] = (),
        app_limit: int | None = None,
        checkpoint: options.Checkpoint | bool | None = None,
    ) -> Callable[[Handler], Function]:
        """Declare a durable function. Options are checked when the app is served."""
        declared = FunctionOptions(
            id=id,
            name=name,
            event=event,
            expression=expression,
            cron=cron,
            triggers=tuple(triggers),
            retries=retries,
            concurrency=_limits(concurrency),
            throttle=throttle,
            rate_limit=rate_limit,
            debounce=debounce,
            batch_events=batch_events,
            priority=_priority(priority),
            idempotency=idempotency,
            singleton=singleton,
            cancel_on=_cancels(cancel_on),
            timeouts=timeouts,
            rolling_window=_windows(rolling_window),
            on_failure=on_failure,
            lane=options.Lane(key=lane) if isinstance(lane, str) else lane,
            scopes=tuple(scopes),
            app_limit=self.app_limit if app_limit is None else app_limit,
            checkpoint=_checkpoint(checkpoint),
        )

        def register(handler: Handler) -> Function:
            fn = Function(self.app_id, declared, handler)
            self.functions.append(fn)
            return fn

        return register

    async def send(self, events: Event | Sequence[Event]) -> list[str]:
        """Send events; returns their ids. Not durable inside a run: use step.send_event."""
        return await self._sender.send(event_list(events))

    def send_sync(self, events: Event | Sequence[Event]) -> list[str]:
        return self._sender.send_sync(event_list(events))

    def endpoint(
        self,
        functions: Sequence[Function] | None = None,
        *,
        framework: str,
        serve_origin: str | None = None,
        serve_path: str | None = None,
    ) -> Endpoint:
        """Check every function (raising InvalidFunctionsError) and build the endpoint."""
        if not self.settings.dev and not self.settings.signing_key:
            raise ValueError(
                "cloud mode needs a signing key: set signing_key= or "
                "WEIR_SIGNING_KEY, or use dev=True / WEIR_DEV=1"
            )
        compiled = compile_all(self.functions if functions is None else functions)
        spec = AppSpec(self.app_id, self.app_version, compiled, framework, serve_origin, serve_path)
        return Endpoint(spec, self.settings, self._sender, self.transport)


def compile_all(functions: Sequence[Function]) -> list[Compiled]:
    problems: list[str] = []
    compiled = [c for fn in functions for c in fn.compile(problems)]
    seen: set[str] = set()
    for c in compiled:
        if c.slug in seen:
            problems.append(f"function {c.slug!r}: id: is used by more than one function")
        seen.add(c.slug)
    raise_if_any(problems)
    return compiled


def _checkpoint(value: options.Checkpoint | bool | None) -> options.Checkpoint | None:
    if value is True:
        return options.Checkpoint()
    if value is None or value is False:
        return None
    return value  # anything else is reported at serve()


def _limits(
    value: int | options.Concurrency | Sequence[options.Concurrency] | None,
) -> tuple[options.Concurrency, ...]:
    if value is None:
        return ()
    if isinstance(value, int) and not isinstance(value, bool):
        return (options.Concurrency(limit=value),)
    if isinstance(value, options.Concurrency):
        return (value,)
    return tuple(value)  # type: ignore[arg-type]  # anything else is reported at serve()


def _windows(
    value: options.RollingWindow | Sequence[options.RollingWindow] | None,
) -> tuple[options.RollingWindow, ...]:
    if value is None:
        return ()
    return (value,) if isinstance(value, options.RollingWindow) else tuple(value)


def _priority(value: options.Priority | str | None) -> options.Priority | None:
    return options.Priority(run=value) if isinstance(value, str) else value


def _cancels(value: options.Cancel | Sequence[options.Cancel] | None) -> tuple[options.Cancel, ...]:
    if value is None:
        return ()
    return (value,) if isinstance(value, options.Cancel) else tuple(value)
