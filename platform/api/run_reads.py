"""The run read models as the API and the UI ask them: at the platform's clock, with each
function's attempts from its registry (so every surface derives the same state)."""

from weir.platform.foundation.spans import Trace
from weir.platform.reads import runs, traces
from weir.platform.reads.records import RunPage
from weir.platform.reads.runs import RunListing, RunView
from weir.platform.service import Platform


async def run_view(weir: Platform, run_id: str) -> RunView | None:
    now, most = weir.clock.now_ms(), runs.max_attempts_of(weir.registry.by_id)
    return await weir.read(lambda c: runs.run_view(c, run_id, now, most))


async def run_listing(weir: Platform, page: RunPage) -> RunListing:
    """A page of runs with each run's state."""
    now, most = weir.clock.now_ms(), runs.max_attempts_of(weir.registry.by_id)
    return await weir.read(lambda c: runs.run_listing(c, page, now, most))


async def run_trace(weir: Platform, run_id: str) -> Trace | None:
    """The run's span tree (reads/traces.py), its calls in flight included."""
    payloads = weir.settings.otel_payloads
    return await weir.read(lambda c: traces.load_trace(c, run_id, weir.trace_names, payloads))
