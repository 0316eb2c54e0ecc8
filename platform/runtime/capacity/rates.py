"""Rate meters as live capacities: the `limit` of each rolling window and shared meter is a
stored capacity (kind `meter`), created at the first sync that declares it and from then on
changed only by operators, like concurrency capacities (docs/semantics.md, Live capacity).

A shared meter (`rate_name`) has one capacity, `meter <name>`, whichever function names it. A
function's own window has one per (function, window length, key expression): its limit is
what operators change, so the limit is not part of its identity. The window length stays the
code's. The claim reads the stored limit when it decides a start (`store.rolling_windows`).
"""

from weir.expressions import key_hash
from weir.platform.foundation.record_type import record
from weir.platform.functions import FunctionConfig, RollingWindow
from weir.platform.functions.parse.durations import format_duration
from weir.platform.registry import Function

MAX_NAME = 200  # readable names cut key expressions short; the id is exact anyway


@record
class RateDeclared:
    capacity_id: str
    name: str  # "meter stripe", "shop-sync rolling window 1s [event.data.user]"
    limit: int


def for_windows(fn_id: str, slug: str, windows: tuple[RollingWindow, ...]) -> list[RateDeclared]:
    """The capacity sizing each window, in the windows' order. Two windows of a function
    differing only in their limit get one capacity each (numbered by their order)."""
    seen: dict[str, int] = {}
    found = []
    for window in windows:
        ident, name = _identity(fn_id, slug, window)
        n = seen.get(ident, 0)
        seen[ident] = n + 1
        if n and window.rate_name is None:
            ident, name = f"{ident}\x00{n}", f"{name} #{n + 1}"
        found.append(RateDeclared(key_hash(f"capacity\x00{ident}"), name, window.limit))
    return found


def _identity(fn_id: str, slug: str, window: RollingWindow) -> tuple[str, str]:
    if window.rate_name is not None:
        return f"meter\x00{window.rate_name}", f"meter {window.rate_name}"
    ident = f"rolling_window\x00{fn_id}\x00{window.window_ms}\x00{window.key or ''}"
    name = f"{slug} rolling window {format_duration(window.window_ms)}"
    if window.key is not None:
        name = f"{name} [{window.key}]"
        name = name if len(name) <= MAX_NAME else name[: MAX_NAME - 2] + "…]"
    return ident, name


def declared(fn_id: str, slug: str, cfg: FunctionConfig) -> list[RateDeclared]:
    """The function's rate capacities, once each (two windows of one meter are one)."""
    found: dict[str, RateDeclared] = {}
    for decl in for_windows(fn_id, slug, cfg.rolling_windows):
        found.setdefault(decl.capacity_id, decl)
    return list(found.values())


def of_function(fn: Function) -> list[RateDeclared]:
    return declared(fn.id, fn.slug, fn.config)
