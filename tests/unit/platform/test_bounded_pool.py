"""The bounded pool: its own threads, a bounded line refused at once, and a place held until
the job ends even when the request that waited for it went away."""

import asyncio
import threading

import pytest
from weir.platform.foundation.bounded_pool import BoundedPool, PoolBusy


async def test_past_its_workers_and_line_a_job_is_refused_at_once() -> None:
    pool = BoundedPool("jobs", workers=1, waiting=1)
    release = threading.Event()
    names: list[str] = []

    def job() -> str:
        names.append(threading.current_thread().name)
        release.wait(5)
        return "done"

    first = asyncio.ensure_future(pool.run(job))
    second = asyncio.ensure_future(pool.run(job))
    await asyncio.sleep(0.05)
    with pytest.raises(PoolBusy, match="1 jobs at once and 1 waiting"):
        await pool.run(job)
    release.set()
    assert await first == await second == "done"
    assert all(name.startswith("weir-jobs") for name in names)  # never the default executor
    assert await pool.run(lambda: "again") == "again"  # both places were given back


async def test_a_cancelled_wait_keeps_the_place_until_the_job_ends() -> None:
    pool = BoundedPool("jobs", workers=1, waiting=0)
    release = threading.Event()
    waiting = asyncio.ensure_future(pool.run(lambda: release.wait(5)))
    await asyncio.sleep(0.05)
    waiting.cancel()  # the client went away; its job still runs on the thread
    await asyncio.sleep(0.05)
    with pytest.raises(PoolBusy):
        await pool.run(lambda: None)
    release.set()
    await asyncio.sleep(0.1)
    assert await pool.run(lambda: 7) == 7
