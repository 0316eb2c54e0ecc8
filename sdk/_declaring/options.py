"""Flow-control options: plain dataclasses, checked and serialised in one pass at serve().

Bounds follow docs/semantics.md; CEL expressions are only checked by the platform.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Literal

from weir.sdk._declaring.problems import Problems
from weir.sdk._durations import Duration, to_timedelta, to_wire

Wire = dict[str, Any]
_DAY = timedelta(days=1)
_WEEK = timedelta(days=7)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _int_at_least(p: Problems, option: str, value: object, low: int) -> None:
    p.check(_is_int(value) and value >= low, option, f"must be an integer >= {low}, got {value!r}")  # type: ignore[operator]


def _expr(p: Problems, option: str, value: object) -> None:
    ok = value is None or (isinstance(value, str) and value.strip() != "")
    p.check(ok, option, f"must be a non-empty CEL expression string, got {value!r}")


def _duration(
    p: Problems, option: str, value: object, upper: timedelta | None = None
) -> str | None:
    wire = p.attempt(option, lambda: to_wire(value))
    if wire is not None and upper is not None and to_timedelta(value) > upper:
        p.add(option, f"must be at most {to_wire(upper)}, got {value!r}")
    return wire


def _drop_none(body: Wire) -> Wire:
    return {k: v for k, v in body.items() if v is not None}


@dataclass(frozen=True)
class Concurrency:
    """At most `limit` steps executing at once (per `key` value); `limit=0` means no limit."""

    limit: int
    key: str | None = None
    scope: Literal["fn", "env", "account"] | None = None

    def to_wire(self, p: Problems, option: str) -> Wire:
        _int_at_least(p, f"{option}.limit", self.limit, 0)
        _expr(p, f"{option}.key", self.key)
        allowed = (None, "fn", "env", "account")
        p.check(
            self.scope in allowed,
            f"{option}.scope",
            f"must be 'fn', 'env' or 'account', got {self.scope!r}",
        )
        needs_key = self.scope in ("env", "account") and self.key is None
        p.check(not needs_key, f"{option}.key", f"is required when scope is {self.scope!r}")
        return _drop_none({"limit": self.limit, "key": self.key, "scope": self.scope})


@dataclass(frozen=True)
class Throttle:
    """Spread run starts: `limit` per `period`, `1 + burst` at once from idle (GCRA)."""

    limit: int
    period: Duration
    burst: int = 0
    key: str | None = None

    def to_wire(self, p: Problems, option: str) -> Wire:
        _int_at_least(p, f"{option}.limit", self.limit, 1)
        _int_at_least(p, f"{option}.burst", self.burst, 0)
        _expr(p, f"{option}.key", self.key)
        period = _duration(p, f"{option}.period", self.period)
        body = {"limit": self.limit, "period": period, "burst": self.burst, "key": self.key}
        return _drop_none(body)


@dataclass(frozen=True)
class RateLimit:
    """Skip events beyond `limit` per `period` (1 s .. 24 h)."""

    limit: int
    period: Duration
    key: str | None = None

    def to_wire(self, p: Problems, option: str) -> Wire:
        _int_at_least(p, f"{option}.limit", self.limit, 1)
        _expr(p, f"{option}.key", self.key)
        period = _duration(p, f"{option}.period", self.period, upper=_DAY)
        return _drop_none({"limit": self.limit, "period": period, "key": self.key})


_MAX_WINDOW_LIMIT = 100_000
_MIN_WINDOW_MS = 1_000
_MAX_WINDOW_MS = 86_400_000
_MAX_RATE_NAME = 128


def _window_ms(value: object) -> int:
    """A rolling window's length in whole ms: an int (ms), a timedelta or '30s'-style text."""
    if isinstance(value, int) and not isinstance(value, bool):
        ms = value
    else:
        try:
            delta = to_timedelta(value)
        except ValueError:
            wanted = "an int (milliseconds), a timedelta or a string like '1s', '5m', '1h'"
            raise ValueError(f"expected {wanted}, got {value!r}") from None
        if delta.microseconds % 1_000:
            raise ValueError(f"must be whole milliseconds, got {value!r}")
        ms = delta // timedelta(milliseconds=1)
    if not _MIN_WINDOW_MS <= ms <= _MAX_WINDOW_MS:
        raise ValueError(f"must be from 1s to 24h (1000 to 86400000 ms), got {value!r}")
    return ms


@dataclass(frozen=True)
class RollingWindow:
    """At most `limit` (1..100,000) run starts in any `window` (1 s..24 h; an int is ms)
    ending now, per `key` value; a run over it waits for room, nothing is dropped.
    `rate_name` makes it a shared meter: every function naming it draws on one budget."""

    limit: int
    window: Duration | int
    key: str | None = None
    rate_name: str | None = None

    def to_wire(self, p: Problems, option: str) -> Wire:
        ok_limit = _is_int(self.limit) and 1 <= self.limit <= _MAX_WINDOW_LIMIT
        wanted = f"must be an integer from 1 to {_MAX_WINDOW_LIMIT}"
        p.check(ok_limit, f"{option}.limit", f"{wanted}, got {self.limit!r}")
        _expr(p, f"{option}.key", self.key)
        name = self.rate_name
        ok_name = name is None or (
            isinstance(name, str)
            and name.strip() != ""
            and len(name) <= _MAX_RATE_NAME
            and name.isprintable()
        )
        p.check(
            ok_name,
            f"{option}.rate_name",
            f"must be printable text of 1 to {_MAX_RATE_NAME} characters, got {name!r}",
        )
        window = p.attempt(f"{option}.window", lambda: _window_ms(self.window))
        body = {"limit": self.limit, "window": window, "key": self.key, "rateName": name}
        return _drop_none(body)


@dataclass(frozen=True)
class Debounce:
    """Start once events stop arriving for `period` (1 s .. 7 d), at most `timeout` late."""

    period: Duration
    key: str | None = None
    timeout: Duration | None = None

    def to_wire(self, p: Problems, option: str) -> Wire:
        _expr(p, f"{option}.key", self.key)
        period = _duration(p, f"{option}.period", self.period, upper=_WEEK)
        timeout = None
        if self.timeout is not None:
            timeout = _duration(p, f"{option}.timeout", self.timeout)
        return _drop_none({"period": period, "key": self.key, "timeout": timeout})


@dataclass(frozen=True)
class Batch:
    """Collect up to `max_size` (>= 2) events, or for `timeout` (>= 1 s), into one run."""

    max_size: int
    timeout: Duration
    key: str | None = None
    if_exp: str | None = None

    def to_wire(self, p: Problems, option: str) -> Wire:
        _int_at_least(p, f"{option}.max_size", self.max_size, 2)
        _expr(p, f"{option}.key", self.key)
        _expr(p, f"{option}.if_exp", self.if_exp)
        timeout = _duration(p, f"{option}.timeout", self.timeout)
        body = {"maxSize": self.max_size, "timeout": timeout, "key": self.key, "if": self.if_exp}
        return _drop_none(body)


@dataclass(frozen=True)
class Priority:
    """`run`: a CEL expression giving seconds (-600 .. 600) to move a run ahead in line."""

    run: str

    def to_wire(self, p: Problems, option: str) -> Wire:
        p.check(
            isinstance(self.run, str) and self.run.strip() != "",
            f"{option}.run",
            f"must be a non-empty CEL expression string, got {self.run!r}",
        )
        return {"run": self.run}


@dataclass(frozen=True)
class Singleton:
    """One active run per key: `skip` new runs, or `cancel` the running one."""

    mode: Literal["skip", "cancel"]
    key: str | None = None

    def to_wire(self, p: Problems, option: str) -> Wire:
        p.check(
            self.mode in ("skip", "cancel"),
            f"{option}.mode",
            f"must be 'skip' or 'cancel', got {self.mode!r}",
        )
        _expr(p, f"{option}.key", self.key)
        return _drop_none({"mode": self.mode, "key": self.key})


@dataclass(frozen=True)
class Cancel:
    """Cancel a run when `event` arrives; `match='data.x'` requires equal `data.x` on both."""

    event: str
    match: str | None = None
    if_exp: str | None = None
    timeout: Duration | None = None

    def to_wire(self, p: Problems, option: str) -> Wire:
        p.check(
            isinstance(self.event, str) and self.event != "",
            f"{option}.event",
            f"must be a non-empty event name, got {self.event!r}",
        )
        _expr(p, f"{option}.match", self.match)
        _expr(p, f"{option}.if_exp", self.if_exp)
        timeout = None
        if self.timeout is not None:
            timeout = _duration(p, f"{option}.timeout", self.timeout)
        return _drop_none({"event": self.event, "if": self._condition(), "timeout": timeout})

    def _condition(self) -> str | None:
        # The wire has only `if`; `match` is sugar for comparing a field of both events.
        parts = []
        if self.match:
            parts.append(f"event.{self.match} == async.{self.match}")
        if self.if_exp:
            parts.append(self.if_exp)
        if len(parts) == 2:
            return f"({parts[0]}) && ({parts[1]})"
        return parts[0] if parts else None


@dataclass(frozen=True)
class Timeouts:
    """`start`: cancel if not started in time; `finish`: cancel if not done this long after."""

    start: Duration | None = None
    finish: Duration | None = None

    def to_wire(self, p: Problems, option: str) -> Wire:
        p.check(
            self.start is not None or self.finish is not None,
            option,
            "needs at least one of start or finish",
        )
        start = finish = None
        if self.start is not None:
            start = _duration(p, f"{option}.start", self.start)
        if self.finish is not None:
            finish = _duration(p, f"{option}.finish", self.finish)
        return _drop_none({"start": start, "finish": finish})


@dataclass(frozen=True)
class Lane:
    """A FIFO lane (Weir only): one run per lane at a time, in the order the runs were created.
    `key` (a CEL expression over `event`) picks the lane; `name` shares the lanes with every
    function that names it."""

    key: str | None = None
    name: str | None = None

    def to_wire(self, p: Problems, option: str) -> Wire:
        _expr(p, f"{option}.key", self.key)
        named = self.name is None or (isinstance(self.name, str) and self.name != "")
        p.check(named, f"{option}.name", f"must be a non-empty string, got {self.name!r}")
        p.check(
            self.key is not None or self.name is not None,
            option,
            "needs a key (a CEL expression over event) or a name, or both",
        )
        return _drop_none({"key": self.key, "name": self.name})


MAX_CHECKPOINT_STEPS = 1000  # a run's whole step budget
MAX_CHECKPOINT_MS = 300_000


@dataclass(frozen=True)
class Checkpoint:
    """Weir only: run consecutive `step.run` steps in one request and report them together.

    A request keeps going after a step instead of stopping at it, until `max_steps` steps
    have run or `max_ms` has passed, or the code reaches a step Weir performs (sleep, wait,
    invoke, a parallel group) or ends. Weir saves every step of the answer in one commit.
    The cost: steps run since the request began are not saved until it answers, so a crash
    of the app or of Weir in between runs them again (docs/sdk.md, Checkpointing)."""

    max_steps: int = 100
    max_ms: int = 2_000

    def check(self, p: Problems, option: str) -> None:
        for field, value, top in (
            ("max_steps", self.max_steps, MAX_CHECKPOINT_STEPS),
            ("max_ms", self.max_ms, MAX_CHECKPOINT_MS),
        ):
            ok = _is_int(value) and 1 <= value <= top
            p.check(ok, f"{option}.{field}", f"must be an integer from 1 to {top}, got {value!r}")
