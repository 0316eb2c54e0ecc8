"""Each source's rate limit, per process: a GCRA meter of `rate_per_s` deliveries a second
with bursts of as many, held in memory (a refusal is a 429 the provider retries)."""

from weir.platform.gates import gcra
from weir.platform.gates.gcra import GcraState, Meter

MAX_TRACKED = 10_000  # sources' meters kept; the oldest are forgotten past it


class Rates:
    def __init__(self) -> None:
        self._states: dict[str, GcraState] = {}

    def retry_after_ms(self, source_id: str, rate_per_s: int, now_ms: int) -> int:
        """0 if a delivery may be taken now (and counts it), else how long until one may."""
        meter = Meter(period_ms=1000, limit=rate_per_s, tolerance=rate_per_s - 1)
        verdict = gcra.check(meter, self._states.get(source_id), now_ms)
        if not verdict.admitted:
            return max(1, verdict.at_ms - now_ms)
        self._states.pop(source_id, None)  # re-inserted last: the dict keeps recency order
        self._states[source_id] = verdict.state
        if len(self._states) > MAX_TRACKED:
            del self._states[next(iter(self._states))]
        return 0
