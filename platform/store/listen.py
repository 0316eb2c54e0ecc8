"""LISTEN on PostgreSQL: one connection per process hears the other processes' wake-ups.

`dialect.notify` sends on commit; this turns what arrives into callbacks (wake the scheduler,
check the catalog). A lost connection is reopened after a pause, and on every (re)connect
both callbacks run once, since notifications sent while nobody listened are gone. The
scheduler's and the catalog's polls stay as the safety net.
"""

import asyncio
import logging
from collections.abc import Callable

import psycopg
from weir.platform.store.database import libpq_conninfo
from weir.platform.store.engine.dialect import CATALOG, WAKE

log = logging.getLogger("weir.store")
RECONNECT_S = 1.0


class Listener:
    def __init__(self, url: str, handlers: dict[str, Callable[[], None]]) -> None:
        self.conninfo = libpq_conninfo(url)
        self.handlers = handlers  # channel -> callback, run on the event loop

    async def run(self) -> None:
        """Listen until cancelled."""
        while True:
            try:
                await self._listen()
            except (psycopg.Error, OSError) as exc:
                log.warning("LISTEN connection lost (%s); polling until it is back", exc)
            await asyncio.sleep(RECONNECT_S)

    async def _listen(self) -> None:
        conn = await psycopg.AsyncConnection.connect(self.conninfo, autocommit=True)
        async with conn:
            for channel in self.handlers:
                await conn.execute(f"LISTEN {channel}")
            self._dispatch_all()
            async for note in conn.notifies():
                self._dispatch(note.channel)

    def _dispatch_all(self) -> None:
        for channel in self.handlers:
            self._dispatch(channel)

    def _dispatch(self, channel: str) -> None:
        handler = self.handlers.get(channel)
        if handler is not None:
            handler()


def wake_and_catalog(url: str, wake: Callable[[], None], catalog: Callable[[], None]) -> Listener:
    """The process's listener: `wake` when another process queued work, `catalog` when it
    changed the synced functions."""
    return Listener(url, {WAKE: wake, CATALOG: catalog})
