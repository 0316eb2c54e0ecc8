"""The platform: one object owning the store, the function registry, the scheduler and the
executor. The API layer calls it; it holds no HTTP concerns itself."""

import asyncio
import contextlib
import hmac
import itertools
import json
import logging
import random
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import Connection
from weir.expressions import configure_budget
from weir.platform.connect import binding
from weir.platform.connect.gateway import Gateway
from weir.platform.connect.transport import ConnectTransport
from weir.platform.executor import ai_hosts
from weir.platform.executor import ai_infer as ai
from weir.platform.executor.driver import TURNS_TO_SEND, Driver
from weir.platform.executor.http.client import AppClient
from weir.platform.executor.sync_request import request_sync, retry_delays
from weir.platform.foundation.clock import Clock, SystemClock
from weir.platform.foundation.trace_context import TraceParent
from weir.platform.foundation.vocabulary import QueueKind, RunStatus, SystemEvent
from weir.platform.functions import SyncError, parse_sync
from weir.platform.ingest import workers as ingest_workers
from weir.platform.ingest.validate import IncomingEvent, parse_body
from weir.platform.observability import logs
from weir.platform.observability.metrics import Metrics
from weir.platform.observability.notes import RUN_FINISHED, Note
from weir.platform.observability.report import report
from weir.platform.reads.traces import TraceNames
from weir.platform.registry import Registry
from weir.platform.runtime import continuation, cron, events, finish_hooks, pausing, runs, timers
from weir.platform.runtime.app_moves import AppMoves
from weir.platform.runtime.rerun import rerun as start_rerun
from weir.platform.runtime.retention import Retention, check_stored_windows, refused_windows
from weir.platform.runtime.steps import ai_infer as ai_steps
from weir.platform.runtime.sync_apply import apply_sync, remove_app
from weir.platform.runtime.tx import Tx
from weir.platform.scheduler import Scheduler
from weir.platform.settings import Settings
from weir.platform.store import queue as q
from weir.platform.store.database import Database, is_sqlite, make_engine, on_rollback
from weir.platform.store.listen import Listener, wake_and_catalog
from weir.platform.store.migrate import upgrade
from weir.platform.store.records import catalog, pauses
from weir.platform.tracing import TraceExport

T = TypeVar("T")
PARSE_ON_LOOP_BYTES = 64 * 1024  # smaller bodies parse faster than a process hand-off
log = logging.getLogger("weir")
MAX_SYNC_ERRORS = 200  # failed sync URLs remembered for the Apps page, the latest kept
# At most this many of an event request's first calls are claimed where it is accepted: the
# room an offer holds counts as calls of every app until the request commits, so a large
# offer would keep the workers finishing meanwhile from taking their next items.
ACCEPT_CLAIMS = 8
CATALOG_POLL_S = 2.0  # the safety net under NOTIFY for syncs made by other processes
CANCEL_POLL_S = 1.0  # how soon a call is aborted when another process cancels its run


class Platform:
    def __init__(self, settings: Settings, clock: Clock | None = None) -> None:
        self.settings = settings
        configure_budget(settings.cel_budget)  # one budget per process, as its CEL workers are
        self.clock = clock or SystemClock()
        self.rng = random.Random()
        self.db = _open_database(settings)
        self.registry = Registry()
        # Registries are read by syncs (in their transaction) and by reloads (after other
        # processes' syncs) at once: each read takes a ticket first, and only a read started
        # later than the installed one's replaces it (`_install`).
        self._reads_of_registry = itertools.count(1)
        self._installed = 0
        self._installing = threading.Lock()  # syncs install on a writer thread
        self.metrics = Metrics()
        self.traces = self._trace_export() if settings.otel else None
        self.client = AppClient(timeout_s=settings.app_timeout_s)
        ai_policy = ai_hosts.policy(settings.allowed_ai_hosts, dev=settings.dev)
        self.models = ai.ModelClients(ai_policy, self.client, ai.guarded_client(ai_policy))
        self.driver = Driver(
            self.db,
            self.clock,
            self.client,
            lambda: self.registry,
            settings.signing_key,
        )
        # start mode trusts only signed answers (docs/protocol.md §12.2); dev mode trusts any
        self.driver.verify_keys = () if settings.dev else settings.signing_keys
        # apps that connect out to Weir over a WebSocket (inngest.connect): synced like any
        # app, but only those the operator names (connect/binding.py)
        self.connect_apps = binding.policy(settings.connect_apps, dev=settings.dev)
        self.gateway = Gateway(
            self.register_connect, lambda name: binding.refused_name(name, self.connect_apps)
        )
        self.driver.connect = ConnectTransport(self.gateway, settings.app_timeout_s)
        self.scheduler = Scheduler(
            self.db,
            self.clock,
            self.handle_item,
            workers=settings.workers,
            lease_ms=settings.lease_ms,
            grace_s=settings.shutdown_grace_s,
            app_of=self._app_of,
            functions_of=self._functions_of,
            per_app=settings.app_call_cap,
            per_function=settings.function_call_share,
            prefetch=self.driver.prefetch,
            paused=lambda: self.registry.paused,
        )
        self.sync_errors: dict[str, str] = {}
        self._asking: set[str] = set()  # URLs this process is asking to sync (PUT in flight)
        self.synced_urls: set[str] = set()  # URLs whose last sync this process asked for held
        self.moves = AppMoves()  # PATCH /v1/apps/{name} under way: whose syncs may apply
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._syncs: list[asyncio.Task[None]] = []
        self._retention: asyncio.Task[None] | None = None
        self._background: list[asyncio.Task[None]] = []
        self._reloading: asyncio.Task[None] | None = None
        self.ready = False

    def _trace_export(self) -> TraceExport:
        """Finished runs' traces, read from the store and sent by an export process."""
        s = self.settings
        export = TraceExport(self.metrics, s.database_url, s.otel_payloads, s.otel_queue)
        self.metrics.run_finished = export.offer
        return export

    def trace_names(self, function_id: str) -> TraceNames:
        fn = self.registry.by_id.get(function_id)
        return TraceNames() if fn is None else TraceNames(fn.slug, app_id=fn.app_id)

    def make_tx(self, conn: Connection) -> Tx:
        clock = self.clock
        return Tx(
            conn,
            clock.now_ms(),
            self.registry,
            self.rng,
            self.settings.retry_delay_ms,
            clock.now_ms,
        )

    async def write(self, job: Callable[[Tx], T]) -> T:
        """Run a transition in one transaction; wake the scheduler if it queued work."""
        holder: list[Tx] = []

        def run(conn: Connection) -> T:
            holder[:] = [self.make_tx(conn)]  # a job run again (a lost race) starts afresh
            tx = holder[0]
            result = job(tx)
            finish_hooks.settle(tx)  # what the runs it ended set off, in the same commit
            # Before the commit, on the writer: the writer's next job (the next event batch's)
            # may claim these runs' first calls before this coroutine resumes.
            if tx.trigger_events or tx.held_events:
                self.driver.remember_events(tx.trigger_events, tx.held_events)
                created = [*tx.trigger_events, *tx.held_events]
                on_rollback(conn, lambda: self.driver.forget(created))
            return result

        result = await self.db.write(run)
        if holder and holder[0].enqueued:
            self.scheduler.wake()
        if holder and holder[0].notes:
            self._after_ended(holder[0].notes)
            # Logged and counted once the caller has gone on: a run's next call (or an event's
            # first calls) goes out first, and the lines are written while the app answers.
            notes = holder[0].notes
            asyncio.get_running_loop().call_soon(report, notes, self.metrics, self.function_slug)
        return result

    def _after_ended(self, done: list[Note]) -> None:
        """Calls in flight of a run just cancelled end now (cancelled in this process;
        `_poll_cancels` finds those other processes cancel); the executor lets go of the
        trigger events of every run that ended (some ended waiting in their lanes)."""
        ended = [note for note in done if note.what == RUN_FINISHED and note.run_id]
        for note in ended:
            if note.fields.get("status") == RunStatus.CANCELLED:
                self.driver.abort(note.run_id or "")
        if ended:
            self.driver.forget(note.run_id or "" for note in ended)

    def _app_of(self, function_id: str) -> str | None:
        """The app of a function: the unit of the per-app call cap."""
        fn = self.registry.by_id.get(function_id)
        return fn.app_id if fn is not None else None

    def _functions_of(self, app_id: str) -> list[str]:
        return self.registry.functions_of(app_id)

    def function_slug(self, function_id: str) -> str:
        return self.registry.slug_of(function_id)

    async def read(self, job: Callable[[Connection], T]) -> T:
        return await self.db.read(job)

    # -- lifecycle -------------------------------------------------------------------------
    async def start(self) -> None:
        ingest_workers.POOL.warm()  # in the background: the first large body need not wait
        await self.reload()
        check_stored_windows(self.registry, self.settings.retention_ms)  # before anything starts
        if is_sqlite(self.settings.database_url):  # SQLite has one process: nothing is in flight
            now = self.clock.now_ms()
            await self.db.write(lambda c: q.release_all_leases(c, now))
        else:  # other processes' leases are theirs: they run out by themselves if dead
            self._background = [
                asyncio.create_task(self._listener().run()),
                asyncio.create_task(self._poll_catalog()),
                asyncio.create_task(self._poll_cancels()),
            ]
        self._task = asyncio.create_task(self.scheduler.run(self._stop))
        if self.traces is not None:
            self.traces.start()
        if self.settings.retention_ms > 0:
            sweeper = Retention(self.db, self.clock, self.settings.retention_ms)
            self._retention = asyncio.create_task(sweeper.run(self._stop))
        self.ready = True
        self._syncs = [
            asyncio.create_task(self._sync_at_start(url)) for url in self.settings.app_urls
        ]

    @property
    def scheduler_running(self) -> bool:
        return self._task is not None and not self._task.done()

    async def stop(self) -> None:
        self.ready = False  # readiness fails while in-flight work drains
        self._stop.set()
        for task in self._background:
            task.cancel()
        self.scheduler.wake()
        if self._task is not None:
            await self._task
        if self._retention is not None:
            await self._retention
        await self.gateway.close()  # after the drain: calls in flight had their workers
        if self.traces is not None:  # the runs that ended in the drain too, within its bound
            await asyncio.to_thread(self.traces.close)
        await self.client.close()
        await self.models.guarded.close()
        self.db.close()

    async def drain_connect(self) -> None:
        """Called on SIGTERM before the HTTP server closes its connections: Connect workers'
        sockets are among them, so the calls in flight over them finish first (within the
        shutdown grace, as `stop` would), then the workers are told to reconnect."""
        if not self.gateway.conns:
            return  # nothing rides on the server's connections: `stop` drains as ever
        self.ready = False
        self._stop.set()
        self.scheduler.wake()
        if self._task is not None:
            await self._task
        await self.gateway.close()

    async def reload(self) -> None:
        ticket = next(self._reads_of_registry)
        await self._adopt(ticket, await self.db.read(_registry))

    async def _adopt(self, ticket: int, registry: Registry) -> None:
        """Install a registry read under `ticket`, then make sure its schedules tick. A
        function resumed (by another process too) makes the scheduler look at once."""
        paused = self.registry.paused.keys()
        self._install(ticket, registry)
        if self.registry.paused.keys() < paused:
            self.scheduler.wake()
        await self.write(lambda tx: cron.ensure_ticks(tx))

    def _install(self, ticket: int, registry: Registry) -> Callable[[], None] | None:
        """Make `registry`, read under `ticket`, the one in force, unless a registry read
        later is in force already (a reload begun before a sync committed, ending after it,
        would otherwise put back the functions as they were). Returns what puts back the
        registry it replaced (None if it replaced none)."""
        with self._installing:
            if ticket <= self._installed:
                return None
            before = self.registry, self._installed
            self.registry, self._installed = registry, ticket
        return lambda: self._put_back(ticket, *before)

    def _put_back(self, ticket: int, registry: Registry, installed: int) -> None:
        """Undo the install under `ticket`, unless a later one replaced it already."""
        with self._installing:
            if self._installed == ticket:
                self.registry, self._installed = registry, installed

    # -- several processes on one PostgreSQL ---------------------------------------------------
    def _listener(self) -> Listener:
        return wake_and_catalog(self.settings.database_url, self.scheduler.wake, self._reload_soon)

    def _reload_soon(self) -> None:
        """Another process synced: reload once (notifications arriving meanwhile fold in)."""
        if self._reloading is None or self._reloading.done():
            self._reloading = asyncio.create_task(self._reload_logged())

    async def _reload_logged(self) -> None:
        try:
            await self.reload()
        except Exception:
            log.exception("reloading the functions failed; the catalog poll tries again")

    async def _poll_catalog(self) -> None:
        while True:
            await asyncio.sleep(CATALOG_POLL_S)
            await self.reload_if_changed()

    async def reload_if_changed(self) -> None:
        try:
            version = await self.db.read(catalog.catalog_version)
        except Exception:
            log.exception("reading the catalog version failed")
            return
        if version != self.registry.version:
            self._reload_soon()
            if self._reloading is not None:
                await asyncio.shield(self._reloading)

    async def _poll_cancels(self) -> None:
        while True:
            await asyncio.sleep(CANCEL_POLL_S)
            try:
                await self.driver.abort_cancelled()
            except Exception:
                log.exception("looking for cancelled runs with calls in flight failed")

    def event_key_allowed(self, key: str) -> bool:
        """`weir dev` takes any key; `weir start` only its configured keys."""
        if self.settings.dev:
            return True
        return any(hmac.compare_digest(key.encode(), k.encode()) for k in self.settings.event_keys)

    # -- work ------------------------------------------------------------------------------
    async def handle_item(self, item: q.Claimed) -> q.Claimed | None:
        """Work on a claimed item; returns the run's next call when the same transaction
        claimed it, for the same worker to make at once."""
        with logs.bind(run_id=item.run_id, function_id=item.function_id, step_id=item.step_id):
            if item.kind == QueueKind.EXEC:
                if item.function_id not in self.registry.by_id:  # synced by another process
                    await self.reload_if_changed()
                return await self._call(item)
            if item.kind == ai_steps.KIND:
                await self._infer(item)
            else:
                await self.write(lambda tx: timers.handle(tx, item))
            return None

    async def _call(self, item: q.Claimed) -> q.Claimed | None:
        """The executor makes the call; the runtime applies its outcome, and claims the run's
        next call in the same transaction when nothing stands in its way."""
        answered = await self.driver.call(item)
        if answered is None:
            return None
        fn, outcome, timing = answered.fn, answered.outcome, answered.timing
        skip = self.scheduler.skip_functions(item)
        held = fn.id in self.registry.paused  # the run's next step waits for the resume
        lease_ms = self.settings.lease_ms
        events = self.driver.known_events(item.run_id or "")

        def apply(tx: Tx) -> q.Claimed | None:
            if events is not None:
                tx.known_events[item.run_id or ""] = events
            more = not self._stop.is_set()
            nxt = continuation.apply_answer(
                tx,
                item,
                fn,
                outcome,
                timing,
                lease_ms=lease_ms,
                skip=skip,
                take_next=more,
                held=held,
            )
            if nxt is not None:
                known = tx.next_call.run if nxt is tx.next_call.claimed else None
                self.driver.prefetch(tx.conn, [nxt], run=known)
            return nxt

        # LeaseLost: another process took the item over and its outcome wins; ours rolls back
        # whole, as every write job runs under its own savepoint.
        with contextlib.suppress(q.LeaseLost):
            return await self.write(apply)
        return None

    async def _infer(self, item: q.Claimed) -> None:
        """step.ai.infer: Weir makes the request itself, then the runtime saves the result."""
        opts = item.payload.get("opts")
        result = await ai.infer(self.models, opts)
        fn = self.registry.by_id.get(item.function_id or "")
        with contextlib.suppress(q.LeaseLost):
            await self.write(lambda tx: ai_steps.apply_result(tx, item, fn, result))

    async def send_events(self, body: bytes, trace: TraceParent | None = None) -> list[str]:
        """Store the events of a POST /e/{key} body; `trace`: the sender's context (its
        `traceparent`), which the runs they start continue."""
        now = self.clock.now_ms()
        if len(body) < PARSE_ON_LOOP_BYTES:
            incoming = parse_body(body, now)
        else:  # in a worker process: this one would hold the GIL for it (ingest_workers),
            # which also makes the costly evaluations admission will need, off the writer
            registry = self.registry
            incoming = await ingest_workers.parse(
                body, now, lambda event, held, ms: events.foresee(registry, event, held, ms)
            )
        foreseen = await events.foresee_costly(self.registry, incoming)
        return await self._accept(foreseen, None if trace is None else trace.to_json())

    async def ingest(
        self, incoming: list[IncomingEvent], also: Callable[[Tx, list[str]], None]
    ) -> list[str]:
        """Events validated elsewhere (webhooks), accepted as sent ones are; `also` is run in
        their transaction with their ids (a webhook delivery's record commits with them)."""
        return await self._accept(await events.foresee_costly(self.registry, incoming), also=also)

    async def _accept(
        self,
        incoming: list[IncomingEvent],
        trace: dict[str, str] | None = None,
        also: Callable[[Tx, list[str]], None] | None = None,
    ) -> list[str]:
        """Store the events; the first calls they make due are claimed in the same
        transaction, within the room the scheduler offers, and started at once."""
        offer = self.scheduler.offer(min(len(incoming), ACCEPT_CLAIMS))
        lease_ms = self.settings.lease_ms
        claimed: list[q.Claimed] = []

        def accept(tx: Tx) -> list[str]:
            tx.trace = trace
            ids = events.accept(tx, incoming)
            if also is not None:
                also(tx, ids)
            if offer is not None:
                now = self.clock.now_ms()  # after any lock the accept waited for
                claimed[:] = continuation.take_due(tx, now, offer.size, lease_ms, offer.skip)
                self.driver.prefetch(tx.conn, claimed, tx.trigger_events)
            return ids

        committed: list[q.Claimed] = []  # stays empty if the transaction did not commit
        try:
            ids = await self.write(accept)
            committed = claimed
        finally:
            if offer is not None:
                self.scheduler.adopt(offer, committed)
        # The calls just started go out first: building and writing this answer would
        # otherwise come between the event and its first call.
        for _ in range(TURNS_TO_SEND if committed else 0):
            await asyncio.sleep(0)
        return ids

    async def register(self, payload: Any) -> dict[str, Any]:
        """An app's sync over HTTP (`/fn/register`)."""
        return await self._register(payload, worker=False)

    async def register_connect(self, payload: Any) -> dict[str, Any]:
        """A Connect worker's sync of one of its apps: only an app `--connect-apps` admits,
        never one (or a function of one) served over HTTP."""
        return await self._register(payload, worker=True)

    async def _register(self, payload: Any, *, worker: bool) -> dict[str, Any]:
        try:
            sync = parse_sync(payload)
            if worker:
                binding.check_worker_sync(sync, self.connect_apps)
            else:
                binding.check_http_sync(sync, self.connect_apps)
            self.moves.check(sync)
            refused_windows(sync.functions, self.settings.retention_ms)

            def job(tx: Tx) -> dict[str, Any]:
                if worker:  # in the sync's transaction: what it would take is as committed
                    binding.check_takeover(tx.conn, sync)
                return apply_sync(tx, sync)

            result = await self._change_catalog(job, lambda done: bool(done.get("modified")))
        except SyncError as exc:
            url = _sync_url(payload, worker=worker)
            self._sync_failed(url, str(exc))
            # a PUT's answer carries it to sync_url's line; the gateway logs a worker's
            if url not in self._asking and not worker:
                _log_sync_failure(
                    url, str(exc), "refused the sync of %s: %s", "refused the sync of %s"
                )
            raise
        self.sync_errors.pop(_sync_url(payload, worker=worker), None)
        return result

    async def cancel(self, run_id: str) -> bool:
        return await self.write(lambda tx: runs.cancel_run(tx, run_id, "cancelled through the API"))

    async def rerun(
        self, run_id: str, from_step: str | None = None, step_input: list[Any] | None = None
    ) -> str:
        """A new run from the same event(s); raises RerunError when it cannot start. With
        `from_step`, the steps the original completed before that step are kept; with
        `step_input`, that step is given it as its input."""
        return await self.write(lambda tx: start_rerun(tx, run_id, from_step, step_input))

    async def cancel_runs(self, run_ids: list[str], reason: str) -> list[str]:
        """Cancel each run still active, in one transaction; the ids actually cancelled."""
        return await self.write(lambda tx: [r for r in run_ids if runs.cancel_run(tx, r, reason)])

    async def invoke(self, slug: str, data: dict[str, Any]) -> str:
        """Start `slug` directly with `data`, as step.invoke does (its trigger is bypassed);
        the invoke event's id. Raises EventError for data Weir would not accept."""
        payload = {**data, "_inngest": {"fn_id": slug}}
        body = json.dumps({"name": SystemEvent.FUNCTION_INVOKED, "data": payload}).encode()
        incoming = parse_body(body, self.clock.now_ms(), internal=True)
        [event_id] = await self.write(lambda tx: events.accept(tx, incoming))
        return event_id

    async def pause(self, asked: pausing.PauseAsked) -> pausing.PauseDone:
        """Pause a function in every process: this one's registry at once, the others' on
        their next reload (`_listener`, `_poll_catalog`). Raises FunctionNotFound."""
        return await self._change_catalog(lambda tx: pausing.pause(tx, asked), lambda _: True)

    async def resume(self, ident: str, actor: str) -> pausing.PauseDone:
        """Raises FunctionNotFound or NotPaused."""
        resume = pausing.resume
        return await self._change_catalog(lambda tx: resume(tx, ident, actor), lambda _: True)

    async def delete_app(self, name: str) -> bool:
        return await self._change_catalog(lambda tx: remove_app(tx, name), bool)

    async def _change_catalog(self, change: Callable[[Tx], T], changed: Callable[[T], bool]) -> T:
        """Apply a change to the stored functions and, when `changed` says it changed them,
        swap in the registry they make inside the same transaction: every transaction after
        it (an event accepted in the same group commit included) admits by the new functions.
        Reloaded only after the commit, an event accepted in between was admitted by the old
        ones (an app's functions stored, its first events matching none of them). If the change
        does not commit, the registry it replaced is put back by the writer before its next
        job. Either way it is reloaded after, in the writer's order (`_reload_in_order`)."""
        swapped = False

        def job(tx: Tx) -> T:
            nonlocal swapped
            done = change(tx)
            if changed(done):
                put_back = self._install(next(self._reads_of_registry), _registry(tx.conn))
                if put_back is not None:  # on the writer, before its next job, if not committed
                    on_rollback(tx.conn, put_back)
                swapped = True
            return done

        try:
            result = await self.write(job)
        except BaseException:  # failed, or its caller cancelled while the job may still run
            await self._reload_in_order()
            raise
        if swapped:
            await self._reload_in_order()
        return result

    async def _reload_in_order(self) -> None:
        """Reload, reading through the writer: after every job queued before (a change's own
        among them), committed. A reload begun between a change's install and its commit
        read the functions as they were, and may have won; a read pool's reload could too."""
        try:
            ticket, registry = await self.db.write(
                lambda conn: (next(self._reads_of_registry), _registry(conn))
            )
        except Exception:  # its group did not commit: what it read may not hold
            await self.reload()
            return
        await self._adopt(ticket, registry)

    async def _sync_at_start(self, url: str) -> None:
        """Apps named at start may still be booting, or be started later: keep asking, less
        and less often (see retry_delays), until one sync succeeds or Weir stops."""
        for delay in retry_delays():
            if await self.sync_url(url) is None:
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), delay)
            if self._stop.is_set():
                return

    async def sync_url(self, url: str) -> str | None:
        """Ask the app at `url` to sync (PUT); returns an error text, or None when it synced."""
        self._asking.add(url)
        since = self.clock.now_ms()

        async def registered_here(app_id: str | None) -> bool:
            return await self.read(lambda c: catalog.registered(c, app_id, since))

        try:
            error = await request_sync(self.client, url, self.settings, registered_here)
        finally:
            self._asking.discard(url)
        if error:
            self._sync_failed(url, error)
            _log_sync_failure(url, error, "sync of %s failed: %s", "sync of %s failed")
        else:
            self.sync_errors.pop(url, None)
            self.synced_urls.add(url)
        return error

    def _sync_failed(self, url: str, error: str) -> None:
        """Keep the last error of `url` for the Apps page (of the latest URLs only: an app may
        name any URL in a sync it starts)."""
        self.sync_errors.pop(url, None)
        self.sync_errors[url] = error
        self.synced_urls.discard(url)
        while len(self.sync_errors) > MAX_SYNC_ERRORS:
            del self.sync_errors[next(iter(self.sync_errors))]


def _sync_url(payload: Any, *, worker: bool) -> str:
    """The URL a sync's errors are kept under: a worker's carries its app's name, as every
    Connect app has the same URL (one refused worker must not mark the others failed)."""
    if worker:
        name = payload.get("appname") if isinstance(payload, dict) else None
        return binding.worker_url(name if isinstance(name, str) else "")
    url = payload.get("url") if isinstance(payload, dict) else None
    return url if isinstance(url, str) else "(no url)"


def _log_sync_failure(url: str, error: str, one_line: str, several: str) -> None:
    """The failed sync of `url`: the error on the line (`one_line`: URL, error), or, for an
    error of several lines (each problem of a refused sync, a CEL error's caret under its
    expression), as its lines under it (`several`: URL)."""
    if "\n" not in error:
        log.warning(one_line, url, error)
        return
    log.warning(several, url, extra={"fields": {"error": logs.Block(error)}})


def _registry(conn: Connection) -> Registry:
    """The functions as stored, read in one transaction."""
    stored, version = catalog.all_functions(conn), catalog.catalog_version(conn)
    return Registry.build(stored, version, pauses.all_paused(conn))


def _open_database(settings: Settings) -> Database:
    url = settings.database_url
    if is_sqlite(url) and ":memory:" not in url:
        Path(url.split("///", 1)[1]).parent.mkdir(parents=True, exist_ok=True)
    engine = make_engine(url, synchronous=settings.sqlite_synchronous)
    upgrade(engine)
    return Database(engine)
