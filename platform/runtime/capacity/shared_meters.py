"""Shared meters at sync: a meter (`rate_name`) has one declared rate across every app.

Functions naming the same meter draw on one budget, so they must agree on what it is. A sync
that declares a meter at another rate than a function already registered (in another app,
or elsewhere in the same sync) is refused, naming both functions, their apps and both rates.
"""

from sqlalchemy import Connection
from weir.platform.foundation.record_type import record
from weir.platform.foundation.vocabulary import GateName
from weir.platform.functions import AppSync, FunctionConfig, Problem, SyncError
from weir.platform.functions.parse.durations import format_duration
from weir.platform.functions.parse.rolling_windows import OPTION
from weir.platform.store.flow import gate_state
from weir.platform.store.records import catalog


@record
class _Declared:
    limit: int
    window_ms: int
    function: str
    app: str


def check_rates(conn: Connection, app_id: str | None, sync: AppSync) -> None:
    """Raise SyncError if the sync declares a meter at a rate differing from its other users;
    the functions of the syncing app itself are replaced, so only other apps' count."""
    if not any(w.rate_name for fn in sync.functions for w in fn.rolling_windows):
        return
    gate_state.lock(conn, f"{GateName.ROLLING_WINDOW}:meters")  # two syncs at once see each other
    declared = _registered(conn, app_id)
    problems: list[Problem] = []
    for config in sync.functions:
        for window in config.rolling_windows:
            if window.rate_name is None:
                continue
            mine = _Declared(window.limit, window.window_ms, config.slug, sync.app_name)
            other = declared.setdefault(window.rate_name, mine)
            if (other.limit, other.window_ms) != (mine.limit, mine.window_ms):
                problems.append(_clash(window.rate_name, mine, other))
    if problems:
        raise SyncError(problems)


def _registered(conn: Connection, app_id: str | None) -> dict[str, _Declared]:
    apps = {app.id: app.name for app in catalog.list_apps(conn)}
    found: dict[str, _Declared] = {}
    for stored in catalog.all_functions(conn):
        if stored.archived or stored.app_id == app_id:
            continue
        config = FunctionConfig.from_json(stored.config)
        for window in config.rolling_windows:
            if window.rate_name is not None:
                app = apps.get(stored.app_id, stored.app_id)
                declared = _Declared(window.limit, window.window_ms, stored.slug, app)
                found.setdefault(window.rate_name, declared)
    return found


def _clash(name: str, mine: _Declared, other: _Declared) -> Problem:
    message = (
        f"meter {name!r} is declared here at {_rate(mine)}, but function {other.function!r} "
        f"of app {other.app!r} declares it at {_rate(other)}; a meter has one rate, so "
        "declare the same limit and window everywhere it is named (or use another name)"
    )
    return Problem(mine.function, OPTION, message)


def _rate(declared: _Declared) -> str:
    return f"{declared.limit} per {format_duration(declared.window_ms)}"
