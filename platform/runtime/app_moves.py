"""Moves of an app to a new URL under way (`PATCH /v1/apps/{name}`): the sync the PUT sets
off must be that app's, or nothing of it is written.

The app at the new URL answers the PUT by posting its config to /fn/register, a request of
its own. Judging the move only after that sync was applied left another app registered (the
one the URL really serves) behind a 409, so the sync is judged before it is applied: a sync
from a URL a move is asking whose app name is not the moved app's is refused whole, and the
refusal reaches the move through the app's answer to the PUT. The moves are this process's:
behind several Weir processes the app's sync must reach the process that asked for it.
"""

from collections.abc import Iterator
from contextlib import contextmanager

from weir.platform.functions import AppSync, Problem, SyncError


class MoveUnderWay(ValueError):
    """Another move to the same URL is waiting for its sync."""


class AppMoves:
    def __init__(self) -> None:
        self._to: dict[str, str] = {}  # URL -> the app being moved there

    @contextmanager
    def moving(self, name: str, url: str) -> Iterator[None]:
        """While the sync from `url` is asked for: a sync from it must be the app `name`."""
        other = self._to.get(url)
        if other is not None:
            raise MoveUnderWay(f"the app {other!r} is being moved to {url}; try again after")
        self._to[url] = name
        try:
            yield
        finally:
            del self._to[url]

    def check(self, sync: AppSync) -> None:
        """Raises SyncError if `sync` comes from a URL an app is being moved to, as another app."""
        name = self._to.get(sync.url)
        if name is not None and name != sync.app_name:
            message = (
                f"the app at {sync.url} calls itself {sync.app_name!r}, but it is being synced "
                f"as the app {name!r} (PATCH /v1/apps/{name}): nothing of it was registered"
            )
            raise SyncError([Problem(None, "appname", message)])
