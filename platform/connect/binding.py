"""Which apps a Connect worker may serve (`--connect-apps`), and what it may never take.

A worker proves only that it holds the signing key (in `weir start`; in `weir dev`, nothing),
and every app of a Weir shares that key, so the key cannot say which app a worker is. The
operator does: `weir start` admits a worker only for the app names `--connect-apps` lists
(none by default: Connect stays off until named); `weir dev` admits any name unless the flag
is given; `*` admits any name in both. Whatever the list, a worker never takes over what is
served over HTTP, where `--allowed-app-hosts` applies:

- an app registered over HTTP (delete it first to hand it to Connect workers);
- a function another app holds (its slug moves only with an HTTP sync);
- a function URL that is not its own socket's (`wss://connect`): Weir would call it over HTTP.

An app named in the list is the Connect workers' alone: an HTTP sync of it is refused too.
The apps are fixed by the worker's first message (WORKER_CONNECT, one per session token): its
socket gets only calls of those apps, and its later messages answer only those calls.
"""

from dataclasses import dataclass
from urllib.parse import quote

from sqlalchemy import Connection
from weir.platform.foundation.jsonvalues import control_char
from weir.platform.functions import CONNECT_URL, AppSync, Problem, SyncError, is_connect_url
from weir.platform.store.records import catalog

FLAG = "--connect-apps"
ANY = "*"
MAX_NAME = 255  # an app's name, as the store keeps it


@dataclass(frozen=True)
class ConnectApps:
    """The app names Connect workers may serve: those `named`, or any (`any_name`)."""

    named: frozenset[str]
    any_name: bool

    @property
    def off(self) -> bool:
        """No app may connect (`weir start` without the flag)."""
        return not self.named and not self.any_name

    def admits(self, app_name: str) -> bool:
        return self.any_name or app_name in self.named

    def binds(self, app_name: str) -> bool:
        """Whether the operator named the app for Connect: then it is not synced over HTTP."""
        return app_name in self.named

    def describe(self) -> str:
        """The rule in a few words, for the start banner and the Apps page."""
        if self.named:
            return f"only {', '.join(sorted(self.named))} ({FLAG})"
        if self.any_name:
            return "any app not served over HTTP"
        return f"off: no app may connect (name them with {FLAG})"


def worker_url(app_name: str) -> str:
    """The address the Apps page and the log give a worker's sync of `app_name`."""
    return f"{CONNECT_URL}?app={quote(app_name, safe='')}"


def policy(configured: tuple[str, ...], *, dev: bool) -> ConnectApps:
    """The policy `--connect-apps` sets (default: any name in dev, none in start); ValueError
    says what is wrong with the list."""
    if not configured:
        return ConnectApps(frozenset(), any_name=dev)
    if ANY in configured:
        others = sorted(set(configured) - {ANY})
        if others:
            raise ValueError(
                f"{FLAG} '*' admits every app name; drop the names beside it "
                f"({', '.join(others)}) or drop '*'"
            )
        return ConnectApps(frozenset(), any_name=True)
    for name in configured:
        if len(name) > MAX_NAME or control_char(name):
            raise ValueError(
                f"{FLAG} {name[:40]!r} is not an app name (at most {MAX_NAME} characters, "
                "no control characters)"
            )
    return ConnectApps(frozenset(configured), any_name=False)


def refused_name(app_name: str, apps: ConnectApps) -> str | None:
    """Why a worker may not serve `app_name`, or None."""
    if apps.admits(app_name):
        return None
    if not apps.named:
        return (
            f"weir start admits no Connect worker: the app {app_name!r} is not named in {FLAG}; "
            f"start Weir with {FLAG} {app_name} to let its workers connect"
        )
    return (
        f"the app {app_name!r} may not be served by a Connect worker: {FLAG} names only "
        f"{', '.join(sorted(apps.named))}; add it there to let its workers connect"
    )


def check_worker_sync(sync: AppSync, apps: ConnectApps) -> None:
    """SyncError unless a worker may sync `sync`: an admitted name, its functions on its
    socket. (What is already registered is checked in the sync's transaction: `check_takeover`.)"""
    problems = []
    if (refused := refused_name(sync.app_name, apps)) is not None:
        problems.append(Problem(None, "appname", refused))
    for fn in sync.functions:
        if not is_connect_url(fn.url):
            problems.append(
                Problem(
                    fn.slug,
                    "url",
                    f"a Connect worker's functions are called over its socket "
                    f"(wss://connect?fnId=...), not at {fn.url!r}: serve it over HTTP instead",
                )
            )
    if problems:
        raise SyncError(problems)


def check_http_sync(sync: AppSync, apps: ConnectApps) -> None:
    """SyncError if an HTTP sync names an app the operator bound to Connect workers."""
    if apps.binds(sync.app_name):
        message = (
            f"the app {sync.app_name!r} is served by Connect workers ({FLAG}): it is not "
            f"synced over HTTP; remove it from {FLAG} to serve it over HTTP"
        )
        raise SyncError([Problem(None, "appname", message)])


def check_takeover(conn: Connection, sync: AppSync) -> None:
    """SyncError if a worker's sync would take what HTTP serves: an app registered over HTTP,
    or a function of another app. Run inside the sync's transaction."""
    app = catalog.get_app_by_name(conn, sync.app_name)
    if app is not None and not is_connect_url(app.url):
        message = (
            f"the app {sync.app_name!r} is registered over HTTP (at {app.url}); a Connect "
            f"worker does not take it over: delete the app first (Apps page, or DELETE "
            f"/v1/apps/{sync.app_name}), then the worker's next connect registers it"
        )
        raise SyncError([Problem(None, "appname", message)])
    problems = []
    for fn in sync.functions:
        held = catalog.get_function_by_slug(conn, fn.slug)
        if held is not None and not held.archived and (app is None or held.app_id != app.id):
            problems.append(
                Problem(
                    fn.slug,
                    "id",
                    "another app holds a function of this id; a Connect worker serves only "
                    "its own app's functions",
                )
            )
    if problems:
        raise SyncError(problems)
