"""The certification's audits: from the app's fsync'd journal and the store's records, after
the drain, count rule by rule what a faulty run would show: lost runs, stuck work, concurrency
over its limit, throttle starts and rate-limit admissions over their GCRA, committed steps run
again. The figures print as one Markdown table per backend.
"""

import json
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from tests.integration import audit
from tests.integration.apps import weir_certify as fns
from tests.integration.harness import AppServer, store_rows

ENDED = ("COMPLETED", "FAILED", "CANCELLED", "SKIPPED")
STARTS_A_RUN = ("c/keyed", "c/throttled", "c/sleeper", "c/waiter", "c/flaky")


@dataclass
class Load:
    """What the load generator saw: events Weir accepted (HTTP 200) and kills it made."""

    accepted: list[tuple[str, str]] = field(default_factory=list)  # event id, name
    refused: int = 0  # requests that failed while a process was down or dying
    kills: int = 0


@dataclass
class Figures:
    backend: str
    seconds: float
    kills: int
    accepted: int
    refused: int
    runs: int
    lost: int
    stuck: int
    concurrency_peak: int
    concurrency_breaches: int
    throttle_starts: int
    throttle_excess: int
    throttle_window_peak: int
    throttle_unseen: int
    throttle_delivery_ms: float
    throttle_app_slack_ms: float
    rate_events: int
    rate_admitted: int
    rate_excess: int
    rate_replay_differences: int
    committed_steps: int
    executions: int
    uncommitted_reruns: int
    committed_reruns: int
    retries: int

    def breaches(self) -> list[str]:
        """Every rule this run broke, in words; empty when certified."""
        limit, _, burst = fns.THROTTLE
        rules = {
            "lost runs": self.lost,
            "stuck runs or queue items": self.stuck,
            "concurrency breaches": self.concurrency_breaches,
            "throttle starts over the rule's GCRA": self.throttle_excess,
            "throttle window over limit+burst": max(0, self.throttle_window_peak - limit - burst),
            "throttled starts the app did not see after Weir's start": self.throttle_unseen,
            "rate-limit admissions over the GCRA": self.rate_excess,
            "committed steps run again": self.committed_reruns,
        }
        return [f"{name}: {count}" for name, count in rules.items() if count]

    def table(self) -> str:
        """The figures as a Markdown table, each rule with its verdict."""
        rows = self._runrows() + self._limitrows() + self._steprows()
        head = f"| {self.backend} | figure | verdict |\n|---|---|---|\n"
        return head + "\n".join(f"| {a} | {b} | {c} |" for a, b, c in rows)

    def _runrows(self) -> list[tuple[str, str, str]]:
        return [
            ("load", f"{self.seconds:.0f} s, {self.kills} SIGKILLs", ""),
            ("events accepted / requests refused", f"{self.accepted} / {self.refused}", ""),
            ("runs", str(self.runs), ""),
            ("lost (accepted, no completed run)", str(self.lost), _ok(self.lost == 0)),
            ("stuck after drain (runs + queue items)", str(self.stuck), _ok(self.stuck == 0)),
        ]

    def _limitrows(self) -> list[tuple[str, str, str]]:
        limit, period, burst = fns.THROTTLE
        rate, rate_period = fns.RATE_LIMIT
        peak, over = self.concurrency_peak, self.concurrency_breaches
        throttle = f"throttle {limit}/{period}s burst {burst}"
        rated = f"{self.rate_events}, {self.rate_admitted}, {self.rate_excess}"
        return [
            (
                f"concurrency {fns.CONCURRENCY}/key: peak, starts over",
                f"{peak}, {over}",
                _ok(not over),
            ),
            (
                f"{throttle}: starts, over the rule's GCRA",
                f"{self.throttle_starts}, {self.throttle_excess}",
                _ok(self.throttle_excess == 0),
            ),
            (
                f"{throttle}: most starts in {period}s (allowed {limit + burst})",
                str(self.throttle_window_peak),
                _ok(self.throttle_window_peak <= limit + burst),
            ),
            (
                "throttle: starts recorded that the app did not see at or after them",
                str(self.throttle_unseen),
                _ok(self.throttle_unseen == 0),
            ),
            (
                "throttle, app side: longest delivery after a start / GCRA slack needed (ms)",
                f"{self.throttle_delivery_ms:.0f} / {self.throttle_app_slack_ms:.0f}",
                "",
            ),
            (
                f"rate limit {rate}/{rate_period}s: events, admitted, over GCRA",
                rated,
                _ok(self.rate_excess == 0),
            ),
            ("rate limit: decisions unlike a replay", str(self.rate_replay_differences), ""),
        ]

    def _steprows(self) -> list[tuple[str, str, str]]:
        done, ran, retried = self.committed_steps, self.executions, self.retries
        return [
            (
                "memoized results / step executions / retried attempts",
                f"{done} / {ran} / {retried}",
                "",
            ),
            ("steps re-run before their commit (allowed)", str(self.uncommitted_reruns), ""),
            (
                "committed steps run again",
                str(self.committed_reruns),
                _ok(not self.committed_reruns),
            ),
        ]


def _ok(good: bool) -> str:
    return "ok" if good else "**BREACH**"


OPEN_RUNS = f"SELECT count(*) FROM runs WHERE status NOT IN {ENDED!r}"


def open_work(url: str) -> int:
    runs = store_rows(url, OPEN_RUNS)[0][0]
    items = store_rows(url, "SELECT count(*) FROM queue")[0][0]
    return int(runs) + int(items)


@dataclass
class Store:
    """The store's records the audits need, read once after the drain."""

    run_fn: dict[str, str]  # run id -> function name
    completed: set[str]
    event_runs: dict[str, list[str]]
    rate_limited: set[str]  # events a rate limit skipped
    limited_events: list[Any]  # id, received_at, payload of every c/limited event
    committed: dict[tuple[str, str], int]  # (run, step name) -> ms its result was stored
    started: dict[str, int]  # run id -> ms its first call was claimed (its throttle's moment)


def _read_store(url: str) -> Store:
    runs = store_rows(
        url,
        "SELECT r.id, f.slug, r.status, r.started_at FROM runs r "
        "JOIN functions f ON f.id = r.function_id",
    )
    event_runs: dict[str, list[str]] = defaultdict(list)
    for row in store_rows(url, "SELECT event_id, run_id FROM event_runs"):
        event_runs[row.event_id].append(row.run_id)
    skipped = "SELECT event_id FROM event_outcomes WHERE outcome = 'rate_limited'"
    limited = "SELECT id, received_at, payload FROM events WHERE name = 'c/limited'"
    return Store(
        run_fn={r.id: r.slug.rsplit("-", 1)[-1] for r in runs},
        completed={r.id for r in runs if r.status == "COMPLETED"},
        event_runs=event_runs,
        rate_limited={r.event_id for r in store_rows(url, skipped)},
        limited_events=sorted(store_rows(url, limited), key=lambda r: (r.received_at, r.id)),
        committed={
            (r.run_id, r.name): r.at for r in store_rows(url, "SELECT run_id, name, at FROM steps")
        },
        started={r.id: r.started_at for r in runs if r.started_at is not None},
    )


def audit_run(url: str, app: AppServer, load: Load, backend: str, seconds: float) -> Figures:
    """Every figure of one certification run."""
    store = _read_store(url)
    journal = _Journal(app)
    return Figures(
        backend=backend,
        seconds=seconds,
        kills=load.kills,
        accepted=len(load.accepted),
        refused=load.refused,
        runs=len(store.run_fn),
        lost=_lost(store, load),
        stuck=open_work(url),
        **_concurrency_figures(journal),
        **_throttle_figures(store, journal),
        **_rate_limit_figures(store),
        **_step_figures(store, journal),
    )


class _Journal:
    """The app's journal: every call of a function and every step body's begin, end or fail."""

    def __init__(self, app: AppServer) -> None:
        self.calls = app.entries("call")
        self.begins = app.entries("begin")
        self.finishes = app.entries("end") + app.entries("fail")


def _lost(store: Store, load: Load) -> int:
    """Accepted events that should have started a run and have no completed run."""
    lost = 0
    for event_id, name in load.accepted:
        done = any(r in store.completed for r in store.event_runs.get(event_id, []))
        skipped = name == "c/limited" and event_id in store.rate_limited
        expected = name in STARTS_A_RUN or name == "c/limited"
        lost += expected and not done and not skipped
    return lost


def _concurrency_figures(journal: _Journal) -> dict[str, int]:
    spans = _spans(journal, "keyed")
    return {
        "concurrency_peak": audit.max_overlap(spans),
        "concurrency_breaches": audit.overruns(spans, fns.CONCURRENCY),
    }


def _spans(journal: _Journal, fn: str) -> list[audit.Span]:
    """Each execution of a step body of `fn`, from its begin to its own end (or failure)."""
    ends: dict[tuple[str, str, int], list[float]] = defaultdict(list)
    for e in journal.finishes:
        ends[(e["run"], e["step"], e["attempt"])].append(e["at"])
    spans = []
    for e in journal.begins:
        if e["fn"] != fn:
            continue
        later = [at for at in ends[(e["run"], e["step"], e["attempt"])] if at >= e["at"]]
        end = min(later) if later else e["at"] + fns.STEP_S  # never journaled: cut short
        spans.append((e["key"], e["at"] * 1000, end * 1000))
    return spans


def _throttle_figures(store: Store, journal: _Journal) -> dict[str, Any]:
    """A run starts when its first call is claimed, the moment its throttle decides (as the
    rate limit is judged by the store's receipt time, the gate's own clock). Per key, those
    starts are counted in every window of one period and replayed through the GCRA the rule
    holds real starts to (`audit.throttle_excess`: τ = (limit + burst - 1) × T), with no
    slack. The app's journal keeps the record
    honest: every recorded start must reach the app at or after it. How long after (the HTTP
    delivery, stretched by kills and a busy CPU) and the slack a replay of the app's own
    arrival times would need are shown, not judged."""
    limit, period_s, burst = fns.THROTTLE
    period = period_s * 1000
    arrivals: dict[str, list[float]] = defaultdict(list)
    key_of: dict[str, str] = {}
    for e in journal.calls:
        if e["fn"] == "throttled":
            arrivals[e["run"]].append(e["at"] * 1000)
            key_of[e["run"]] = e["key"]
    starts: dict[str, list[float]] = defaultdict(list)
    seen: dict[str, list[float]] = defaultdict(list)
    unseen, delivery = 0, 0.0
    for run, times in arrivals.items():
        started = store.started.get(run)
        after = [t - started for t in times if started is not None and t >= started - 1]
        unseen += not after  # ms clocks: an arrival may round 1 ms before the record
        delivery = max(delivery, min(after, default=0.0))
        starts[key_of[run]].append(float(started if started is not None else min(times)))
        seen[key_of[run]].append(min(times))
    return {
        "throttle_starts": len(arrivals),
        "throttle_excess": sum(
            audit.throttle_excess(t, period, limit, burst) for t in starts.values()
        ),
        "throttle_window_peak": max(
            (audit.window_peak(t, period) for t in starts.values()), default=0
        ),
        "throttle_unseen": unseen,
        "throttle_delivery_ms": delivery,
        "throttle_app_slack_ms": max(
            (audit.gcra_overshoot(t, period, limit, burst) for t in seen.values()), default=0.0
        ),
    }


def _rate_limit_figures(store: Store) -> dict[str, int]:
    """Per key, the admitted events (by the store's receipt time, the gate's own clock)
    replayed through the GCRA (τ = (limit − 1) × T); and every event replayed in order."""
    limit, period_s = fns.RATE_LIMIT
    by_key: dict[str, list[tuple[int, bool]]] = defaultdict(list)
    for row in store.limited_events:
        key = str(json.loads(row.payload)["data"]["k"])
        by_key[key].append((row.received_at, row.id in store.event_runs))
    excess = differences = 0
    for events in by_key.values():
        admitted = [at for at, ran in events if ran]
        excess += audit.gcra_excess(admitted, period_s * 1000, limit, limit - 1)
        replay = audit.gcra_replay([at for at, _ in events], period_s * 1000, limit, limit - 1)
        differences += sum(r != ran for r, (_, ran) in zip(replay, events, strict=True))
    return {
        "rate_events": len(store.limited_events),
        "rate_admitted": sum(ran for events in by_key.values() for _, ran in events),
        "rate_excess": excess,
        "rate_replay_differences": differences,
    }


def _step_figures(store: Store, journal: _Journal) -> dict[str, int]:
    """A step body that began after its result was stored ran again after its commit. One
    that ran twice in the same attempt before that was cut by a kill: allowed."""
    committed_reruns = 0
    attempts: dict[tuple[str, str, int], int] = defaultdict(int)
    for e in journal.begins:
        attempts[(e["run"], e["step"], e["attempt"])] += 1
        stored = store.committed.get((e["run"], e["step"]))
        committed_reruns += stored is not None and e["at"] * 1000 > stored
    return {
        "committed_steps": len(store.committed),
        "executions": len(journal.begins),
        "uncommitted_reruns": sum(n - 1 for n in attempts.values()),
        "committed_reruns": committed_reruns,
        "retries": sum(1 for _, _, attempt in attempts if attempt > 0),
    }
