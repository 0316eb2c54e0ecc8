"""A small pool of threads of its own for one kind of costly request, with a bounded wait.

Work that takes long on a thread (a simulation, parsing a GraphQL query) must not take the
threads the store's reads run on (asyncio's default executor): a few such requests at once
then made every REST read wait behind them. Each kind gets its own threads, and no more than
`waiting` requests queue for them; past that a request is refused at once (`PoolBusy`), never
held in a line that grows without bound.
"""

import asyncio
import contextlib
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")


class PoolBusy(RuntimeError):
    """Every thread is working and the line is full: ask again later."""


class BoundedPool:
    def __init__(self, name: str, workers: int, waiting: int) -> None:
        self.name, self.workers, self.waiting = name, workers, waiting
        self._executor = ThreadPoolExecutor(workers, thread_name_prefix=f"weir-{name}")
        self._held = 0  # jobs running or queued, released when the job itself ends

    async def run(self, job: Callable[[], T]) -> T:
        if self._held >= self.workers + self.waiting:
            raise PoolBusy(
                f"{self.workers} {self.name} at once and {self.waiting} waiting is the most "
                "Weir takes; try again shortly"
            )
        loop = asyncio.get_running_loop()
        self._held += 1
        future = self._executor.submit(job)

        def release(_: Future[T]) -> None:  # a job keeps its place until it ends, even if
            with contextlib.suppress(RuntimeError):  # the request waiting went away (or the
                loop.call_soon_threadsafe(self._release)  # loop did, at shutdown)

        future.add_done_callback(release)
        return await asyncio.wrap_future(future)

    def _release(self) -> None:
        self._held -= 1
