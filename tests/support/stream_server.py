"""A raw asyncio stream server on a loopback address, served from a thread of its own: the
base of the test servers that answer HTTP byte for byte (misbehaving apps, model stand-ins)."""

import asyncio
import contextlib
import threading
from collections.abc import Iterator
from typing import Self


class StreamServer:
    """Subclasses answer each connection in `_handle`; `port` is known once `running`."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self.host = host
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    async def _handle(self, r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        raise NotImplementedError

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        server = self._loop.run_until_complete(asyncio.start_server(self._handle, self.host, 0))
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()
        server.close()

    @contextlib.contextmanager
    def running(self) -> Iterator[Self]:
        self._thread.start()
        self._ready.wait(5)
        try:
            yield self
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(5)
