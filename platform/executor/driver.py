"""Drives one claimed call: read the run's state, POST it to the app, judge the answer.

The outcome goes back to the caller, which applies it through the runtime
(`runtime.outcomes.apply`): the executor knows how to talk to apps, not how runs move on.
"""

import asyncio
import contextlib
import itertools
import json
import logging
import secrets
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import Any, cast

import rfc8785
from sqlalchemy import Connection
from weir.platform.executor import answer_limits, app_errors, signing, trust
from weir.platform.executor.http.client import AppClient, Redirected, TransportError
from weir.platform.executor.memos import MemoCache
from weir.platform.executor.request import (
    CallState,
    Canonical,
    Event,
    Unparsed,
    attempts_allowed,
    build_body,
    job_id,
    series_id,
    step_url,
    trace_headers,
    with_claim_fences,
)
from weir.platform.executor.response import (
    AttemptFailed,
    Outcome,
    RawResponse,
    Timing,
    classify,
    failed,
)
from weir.platform.executor.transport import AppRequest, Transport
from weir.platform.foundation.clock import Clock
from weir.platform.foundation.record_type import record
from weir.platform.foundation.vocabulary import QueueKind
from weir.platform.functions import is_connect_url
from weir.platform.ingest import workers as ingest_workers
from weir.platform.ingest.validate import LARGE_EVENT_BYTES
from weir.platform.registry import Function, Registry
from weir.platform.store import queue as q
from weir.platform.store.database import Database
from weir.platform.store.flow import fifo_lanes as fifo
from weir.platform.store.records import events as event_records
from weir.platform.store.records import runs as run_records
from weir.platform.store.records.runs import Run

log = logging.getLogger("weir.executor")

JUDGE_ON_LOOP_BYTES = 64 * 1024  # a bigger answer is parsed off the event loop
# Event-loop turns from a call's start to its request written to the app: its worker's own
# turn, then its request task's (`_send`). Whoever starts calls and would rather they went
# out before its own work (the event API's answer) lets the loop run this many turns.
TURNS_TO_SEND = 2


@record
class Answered:
    """A call that got an outcome, for the runtime to apply."""

    fn: Function
    outcome: Outcome
    timing: Timing


def load_call_state(
    conn: Connection,
    run_id: str,
    events: list[Event] | None = None,
    run: Run | None = None,
    memos: MemoCache | None = None,
) -> CallState | None:
    """The run (unless the caller holds it as this transaction left it), its trigger events
    (unless the caller has them already) and its memos (those `memos` does not hold). A large
    event is left as its stored bytes (`Unparsed`): `ready_to_send` makes it canonical in a
    worker process, not here."""
    if run is None or run.id != run_id:
        run = run_records.get_run(conn, run_id)
    if run is None:
        return None
    if events is None:
        events = [
            json.loads(text) if len(text) < LARGE_EVENT_BYTES else Unparsed(text.encode())
            for text in event_records.load_event_texts(conn, list(run.event_ids))
        ]
    found = (memos or _NO_MEMOS).memos(conn, run)
    return CallState(run, events, found, fifo.run_fences(run.keys))


_NO_MEMOS = MemoCache(runs=0)  # keeps nothing: every memo is read


async def ready_to_send(state: CallState) -> CallState:
    """The state with its large events in canonical JSON; raises ingest_workers.Unsendable."""
    if not any(isinstance(event, Unparsed) for event in state.events):
        return state
    events: list[Event] = [
        Canonical(await ingest_workers.canonical(e.json)) if isinstance(e, Unparsed) else e
        for e in state.events
    ]
    return replace(state, events=events)


# Request ids are unique, not secret: a random prefix per process and a counter.
_REQUEST_PREFIX = secrets.token_hex(6)
_REQUEST_COUNTER = itertools.count(1)
EVENTS_CACHED = 4096  # runs whose trigger events are kept: they never change
HELD_CACHED = 4096  # the same for runs waiting in FIFO lanes, kept apart (`remember_events`)
# A held run's events kept this long are given up for a newer run's when the store is full:
# the run may have been called by another process, or its creation rolled back.
HELD_STALE_MS = 10 * 60 * 1000
PREFETCHED_KEPT = 4096  # call states read at the claim and not yet used (bounds a leak)


def _plain(created: dict[str, list[dict[str, Any]]] | None, run_id: str) -> list[Event] | None:
    """A new run's trigger events as its first call sends them, unless one is a large event
    (a Document, sent as canonical bytes made in a worker: read back like any other)."""
    events = parsed_events(None if created is None else created.get(run_id))
    return None if events is None else list[Event](events)


def parsed_events(events: Sequence[object] | None) -> list[dict[str, Any]] | None:
    """`events` if every one is a parsed event (a plain dict: not a Document, nor bytes)."""
    if events is None or not all(type(event) is dict for event in events):
        return None
    return cast(list[dict[str, Any]], events)


class Driver:
    verify_keys: tuple[str, ...] = ()  # start mode: answers must be signed with one of these
    connect: Transport | None = None  # calls to functions of Connect workers (docs/protocol.md §13)

    def __init__(
        self,
        db: Database,
        clock: Clock,
        client: AppClient,
        registry: Callable[[], Registry],
        signing_key: str | None = None,
    ) -> None:
        self.db, self.clock, self.client = db, clock, client
        self.registry, self.signing_key = registry, signing_key
        self._events: dict[str, list[Event]] = {}
        self._held: dict[str, tuple[int, list[Event]]] = {}  # run id -> (kept at, events)
        # run id -> the tasks awaiting its requests; `_aborted`: those `abort` cancelled
        self._calls: dict[str, set[asyncio.Task[Any]]] = {}
        self._aborted: set[asyncio.Task[Any]] = set()
        # (queue item id, lease token) -> its call state: a run's next call may reuse the row
        # of the call before it (`queue.enqueue_in_place`), never the lease
        self._prefetched: dict[tuple[int, str], CallState | None] = {}
        self.memos = MemoCache()  # runs' memos between their calls
        # Writer threads and the event loop both change `_events`, `_held` and `_prefetched`:
        # each change is made under this lock (a read is one dict lookup, safe without it).
        self._keeping = threading.Lock()

    def remember_events(
        self,
        by_run: dict[str, list[dict[str, Any]]],
        held: dict[str, list[dict[str, Any]]] | None = None,
    ) -> None:
        """The trigger events of runs just created: their first call need not read them back.
        `held`: those of runs created waiting in their FIFO lanes, for their first call once
        the lane reaches them, kept apart: a long lane would push out the events of runs
        about to be called for some that wait far behind. When that store is full, a new
        run's are kept only in place of some kept for HELD_STALE_MS: the runs kept first are
        the first in line."""
        fresh = [(r, plain) for r in by_run if (plain := _plain(by_run, r)) is not None]
        waiting = [(r, plain) for r in held or () if (plain := _plain(held, r)) is not None]
        if not fresh and not waiting:
            return
        now = self.clock.now_ms() if waiting else 0
        with self._keeping:
            for run_id, events in fresh:
                self._keep_events(run_id, events)
            for run_id, events in waiting:
                if len(self._held) >= HELD_CACHED:
                    oldest = next(iter(self._held))
                    if now - self._held[oldest][0] < HELD_STALE_MS:
                        break
                    del self._held[oldest]
                self._held[run_id] = (now, events)

    def forget(self, run_ids: Iterable[str]) -> None:
        """The runs ended, or their creation did not commit: their events and memos are not
        wanted."""
        run_ids = list(run_ids)
        with self._keeping:
            for run_id in run_ids:
                self._held.pop(run_id, None)
                self._events.pop(run_id, None)
        self.memos.forget(run_ids)

    def known_events(self, run_id: str) -> list[dict[str, Any]] | None:
        """The run's trigger events as its calls send them, if held here and all parsed (a
        large event is held as bytes)."""
        return parsed_events(self._events.get(run_id))

    def _known(self, run_id: str) -> list[Event] | None:
        """The run's events if held here (read without the lock: one lookup each)."""
        kept = self._events.get(run_id)
        if kept is not None:
            return kept
        held = self._held.get(run_id)
        return None if held is None else held[1]

    def _keep_events(self, run_id: str, events: list[Event]) -> None:
        """Under `_keeping`."""
        if len(self._events) >= EVENTS_CACHED:
            self._events.pop(next(iter(self._events)))  # the oldest entry goes first
        self._events[run_id] = events
        self._held.pop(run_id, None)  # called now: kept with the others from here on

    def prefetch(
        self,
        conn: Connection,
        items: list[q.Claimed],
        created: dict[str, list[dict[str, Any]]] | None = None,
        run: Run | None = None,
    ) -> None:
        """Read the call state of just-claimed calls inside the claim's own transaction (the
        writer thread): no separate read transaction and thread hop per call. Only this
        dict is written here; the event loop pops from it. `created`: the trigger events of
        runs the same transaction created, which need not be read back; `run`: an item's run
        as the same transaction left it, which need not be read back either."""
        calls = [i for i in items if i.kind == QueueKind.EXEC and i.run_id is not None]
        wanted = [str(item.run_id) for item in calls if run is None or item.run_id != run.id]
        found = run_records.get_runs(conn, wanted) if wanted else {}  # one read for all
        states = {}
        for item in calls:
            run_id = str(item.run_id)
            known = self._known(run_id) or _plain(created, run_id)
            states[item.id, item.token] = load_call_state(
                conn, run_id, known, found.get(run_id, run), self.memos
            )
        with self._keeping:  # writer threads fill the dict, the event loop takes from it
            self._prefetched.update(states)
            while len(self._prefetched) > PREFETCHED_KEPT:  # items claimed, then handed back
                self._prefetched.pop(next(iter(self._prefetched)))

    async def abort_cancelled(self) -> None:
        """Abort the requests of runs cancelled where `abort` was not told: by another
        process sharing the store."""
        if self._calls:
            run_ids = list(self._calls)
            for run_id in await self.db.read(lambda c: run_records.cancelled_among(c, run_ids)):
                self.abort(run_id)

    def calling(self, run_id: str) -> bool:
        """Whether a request of the run is under way (started, not yet answered)."""
        return bool(self._calls.get(run_id))

    def abort(self, run_id: str) -> None:
        """The run was cancelled: its requests in flight are moot, so they end now (and free
        their workers) instead of running on for up to the app timeout."""
        for waiting in self._calls.get(run_id, ()):
            if waiting not in self._aborted:
                self._aborted.add(waiting)
                waiting.cancel()  # it is suspended inside its request: the error lands there

    async def call(self, item: q.Claimed) -> Answered | None:
        """POST the item's call; its outcome, or None when there is nothing to apply (the
        run has ended, or the call was aborted), the item then being finished here."""
        fn = self.registry().by_id.get(item.function_id or "")
        state = await self._state(item)
        if fn is None or state is None or state.run.ended:
            await self.db.write(lambda c: q.finish(c, item, self.clock.now_ms()))
            return None
        started = self.clock.now_ms()
        outcome = await self._post(fn, item, state, started)
        if outcome is None:  # aborted: the run has ended, so there is nothing to retry
            log.info("call aborted: its run was cancelled")
            with contextlib.suppress(q.LeaseLost):
                await self.db.write(lambda c: q.finish(c, item, self.clock.now_ms()))
            return None
        return Answered(fn, outcome, Timing(started, self.clock.now_ms()))

    async def _ready(self, state: CallState) -> CallState:
        """The state with every event ready to send, kept for the run's next calls."""
        if state.run.id not in self._events:
            state = await ready_to_send(state)
            with self._keeping:
                self._keep_events(state.run.id, state.events)
        return state

    async def _state(self, item: q.Claimed) -> CallState | None:
        run_id = item.run_id or ""
        known = self._known(run_id)
        with self._keeping:
            prefetched = (item.id, item.token) in self._prefetched
            state = self._prefetched.pop((item.id, item.token), None)
        if not prefetched:
            state = await self.db.read(
                lambda c: load_call_state(c, run_id, known, None, self.memos)
            )
        if state is not None:  # read in a committed transaction: kept for the run's next call
            self.memos.keep(state.run, state.memos)
        return state

    async def _post(
        self, fn: Function, item: q.Claimed, state: CallState, started: int
    ) -> Outcome | None:
        """The call's outcome; None if it was aborted."""
        state = with_claim_fences(state, item.fences)
        try:
            state = await self._ready(state)
            body = build_body(
                state,
                fn_id=fn.id,
                step_id=item.step_id,
                attempt=item.attempt,
                max_attempts=attempts_allowed(fn),
            )
        except (rfc8785.CanonicalizationError, ingest_workers.Unsendable) as exc:
            return unsendable(exc)
        headers = self._headers(item, body, state.fences)
        # W3C Trace Context: the app's spans nest under this call's span (reads/traces.py
        # names it the same from the call's history row)
        headers.update(trace_headers(state.run, item.step_id, item.attempt, started))
        sent = trust.Sent(
            headers.get("x-inngest-signature", ""),
            self.clock.now_ms() // 1000,
            trust.binds_answers(fn.app_sdk),
            item.step_id,
        )
        try:
            raw = await self._send(item, fn, body, headers)
        except Redirected as exc:
            return failed("Redirected", str(exc))
        except TransportError as exc:
            return failed("ConnectionError", app_errors.unreachable(fn.url, exc))
        if raw is None:
            return None
        if failure := app_errors.non_sdk_failure(fn.url, raw):
            return failure
        # A Connect worker's socket was opened with the signing key (/v0/connect/start), and
        # the SDK signs no answer sent over it: the channel vouches for its answers.
        keys = () if is_connect_url(fn.url) else self.verify_keys
        if len(raw.body) < JUDGE_ON_LOOP_BYTES:
            return self._judge(raw, state, sent, keys)
        return await asyncio.to_thread(self._judge, raw, state, sent, keys)  # a big answer

    async def _send(
        self, item: q.Claimed, fn: Function, body: bytes, headers: dict[str, str]
    ) -> RawResponse | None:
        """POST the request (over HTTP, or a Connect worker's socket), abortable through
        `abort`; None if it was aborted.

        The request is awaited in the caller's own task, not in one of its own: a new task
        would start only on the loop's next turn, behind every callback already waiting
        (the log lines of the transition that claimed this call among them). `abort`
        cancels the caller's task while it waits here, and the cancellation is taken back
        below."""
        task = asyncio.current_task()
        assert task is not None
        calls = self._calls.setdefault(item.run_id or "", set())
        calls.add(task)
        try:
            return await self._carry(item, fn, body, headers)
        except asyncio.CancelledError:
            if self._take_back(task):
                return None
            raise  # the task itself is cancelled (shutdown), not only its request
        finally:
            # An abort whose cancellation was swallowed on the way (a `wait_for` that already
            # had its answer) is taken back too: left counted, it would pass a later abort of
            # this worker's task for a shutdown.
            self._take_back(task)
            calls.discard(task)
            if not calls:
                self._calls.pop(item.run_id or "", None)

    def _take_back(self, task: asyncio.Task[Any]) -> bool:
        """Undo `abort`'s cancellation of `task`; True if nothing else cancels it (False too if
        `abort` did not cancel it)."""
        if task not in self._aborted:
            return False
        self._aborted.discard(task)
        return task.uncancel() == 0

    async def _carry(
        self, item: q.Claimed, fn: Function, body: bytes, headers: dict[str, str]
    ) -> RawResponse:
        if not is_connect_url(fn.url):
            return await self.client.request("POST", step_url(fn.url, item.step_id), body, headers)
        if self.connect is None:
            raise TransportError("this Weir process does not serve Connect")
        job = series_id(item.id, item.series)
        request = AppRequest(fn, body, headers, item.step_id, item.run_id or "", job)
        return await self.connect.send(request)

    def _judge(
        self, raw: RawResponse, state: CallState, sent: trust.Sent, keys: tuple[str, ...]
    ) -> Outcome:
        """The answer as an outcome: only if signed for this request (start mode), and within
        the size limits."""
        refused = trust.unverified(raw, keys, sent, self.clock.now_ms() // 1000)
        if refused is not None:
            return refused
        outcome = classify(raw, self.clock.now_ms())
        if keys and not sent.bound:  # signed, but bound to no request: check what it can be
            refused = trust.misplaced(outcome, sent, lambda: {m.step_id for m in state.memos})
            if refused is not None:
                return refused
        return answer_limits.enforce(outcome, state.run.state_bytes, answer_bytes=len(raw.body))

    def _headers(self, item: q.Claimed, body: bytes, fences: dict[str, int]) -> dict[str, str]:
        headers = {
            "content-type": "application/json",
            "x-run-id": item.run_id or "",
            "x-request-id": f"{_REQUEST_PREFIX}{next(_REQUEST_COUNTER):x}",
            "x-inngest-job-id": job_id(item.id, item.series, fences),
            "x-inngest-step-id": item.step_id,
            "x-inngest-req-version": "2",
        }
        if self.signing_key:
            seconds = self.clock.now_ms() // 1000
            headers["x-inngest-signature"] = signing.sign(body, self.signing_key, seconds)
        return headers


def unsendable(exc: Exception) -> AttemptFailed:
    # retrying would fail the same way, so the run fails at once, saying why
    return failed(
        "InvalidRunState",
        f"the run's events or step results cannot be sent to the app as canonical JSON "
        f"({exc}); numbers must be finite, and integers within ±(2^53-1)",
        no_retry=True,
    )
