"""Sending finished runs' traces to an OpenTelemetry collector, off Weir's own process.

Off unless the operator turns it on (`--otel`). A run's end only offers the run's id to a
bounded in-process queue (`Metrics.run_finished`, after the commit). A thread hands the ids
on, in lists, to an export process of its own (started with `spawn`): that process reads each
run's trace from the store (`reads.traces`, its own connection), turns it into the SDK's
spans and hands them to the OTLP exporter (`observability.otel`). Building and encoding spans
is Python work that, in Weir's process, would take the GIL from the event loop and the
writer; there it costs Weir one queue put per run. A slow or unreachable collector holds the
export process only: the pipe to it fills, then the queue, and further runs' traces are
dropped and counted (`weir_traces_dropped_total{reason="queue_full"}`); spans an export
could not deliver are counted as `weir_trace_spans_dropped_total`. Nothing in the store
depends on it. If the export process dies, the traces offered after that are dropped and
counted (`reason="exporter_gone"`).
"""

import contextlib
import logging
import multiprocessing
import os
import queue
import threading
from collections.abc import Sequence
from multiprocessing.connection import Connection as Pipe
from multiprocessing.sharedctypes import SynchronizedArray
from typing import Any

from weir.platform.observability import otel
from weir.platform.observability.metrics import Metrics
from weir.platform.reads.traces import TraceNames, load_trace, names_in
from weir.platform.store.database import make_engine

log = logging.getLogger("weir.traces")
BATCH_RUNS = 256  # run ids handed to the export process at once, at most
EXPORT_RUNS = 64  # runs whose spans go in one export request, at most
EXPORT_NICENESS = 10  # the export process's `nice` increment
HAND_ON_S = 0.2  # how long the hand-on thread waits for more ids before sending a list
# the export process's counts, read back by Weir: spans delivered, spans not delivered,
# traces the sampler left out, traces it could not read
EXPORTED, FAILED, SAMPLED_OUT, UNREADABLE = range(4)
_STOP = ""  # the queue's end marker (no run id is empty)


class TraceExport:
    """The bounded queue in Weir's process, the thread that hands its ids on, and the export
    process."""

    def __init__(
        self, metrics: Metrics, database_url: str, payloads: bool, queue_runs: int
    ) -> None:
        self.metrics = metrics
        self._queue: queue.Queue[str] = queue.Queue(maxsize=max(1, queue_runs))
        context = multiprocessing.get_context("spawn")  # never fork a process with threads
        # duplex: the export process answers each list once it is sent, and no list is handed
        # on before that, so what waits is bounded by the queue (and one list in hand)
        self._child_end, self._pipe = context.Pipe(duplex=True)
        self._counts: SynchronizedArray[Any] = context.Array("q", 4)
        self._seen = [0, 0, 0, 0]
        self._process = context.Process(
            target=export_main,
            args=(self._child_end, self._counts, database_url, payloads),
            name="weir-otel",
            daemon=True,
        )
        self._thread = threading.Thread(target=self._hand_on, name="weir-otel", daemon=True)

    def start(self) -> None:
        self._process.start()
        self._child_end.close()  # the export process's end
        self._thread.start()

    def offer(self, run_id: str) -> None:
        """A run has ended: its trace is to be sent (or, with the queue full, dropped)."""
        try:
            self._queue.put_nowait(run_id)
        except queue.Full:
            self.metrics.traces_dropped.labels("queue_full").inc()

    def close(self, timeout_s: float = 5.0) -> None:
        """Send what is queued, within `timeout_s`; what is left then is dropped."""
        if not self._thread.is_alive():
            return
        with contextlib.suppress(queue.Full):  # then the thread ends with the process
            self._queue.put(_STOP, timeout=timeout_s / 3)
        self._thread.join(timeout_s / 3)
        self._process.join(timeout_s / 3)
        if self._process.is_alive():
            self._process.terminate()
        self._sync_counts()

    def _hand_on(self) -> None:
        while True:
            try:
                batch = [self._queue.get(timeout=HAND_ON_S)]
            except queue.Empty:
                self._sync_counts()
                continue
            while len(batch) < BATCH_RUNS:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            stop = _STOP in batch
            ids = [run_id for run_id in batch if run_id != _STOP]
            try:
                if ids:
                    self._pipe.send(ids)
                    self._pipe.recv()  # its answer: the list is sent (or dropped, counted)
                if stop:
                    self._pipe.send(None)
            except (EOFError, OSError):  # the export process is gone
                self.metrics.traces_dropped.labels("exporter_gone").inc(len(ids))
            self._sync_counts()
            if stop:
                self._pipe.close()
                return

    def _sync_counts(self) -> None:
        """Move the export process's counts into this process's metrics."""
        now = list(self._counts[:])
        delta = [n - seen for n, seen in zip(now, self._seen, strict=True)]
        self._seen = now
        m = self.metrics
        if delta[EXPORTED]:
            m.spans_exported.inc(delta[EXPORTED])
        if delta[FAILED]:
            m.spans_dropped.inc(delta[FAILED])
        if delta[SAMPLED_OUT]:
            m.traces_dropped.labels("sampled_out").inc(delta[SAMPLED_OUT])
        if delta[UNREADABLE]:
            m.traces_dropped.labels("unreadable").inc(delta[UNREADABLE])


def export_main(
    pipe: Pipe, counts: "SynchronizedArray[Any]", database_url: str, payloads: bool
) -> None:
    """The export process: lists of run ids in, their traces out to the collector, until
    told to stop (None) or Weir's end of the pipe closes."""
    # Weir and its apps come first: when the cores are short, the export falls behind and
    # its queue drops (counted), rather than taking CPU from the runs
    with contextlib.suppress(OSError):
        os.nice(EXPORT_NICENESS)
    engine = make_engine(database_url)
    exporter = otel.otlp_exporter()
    resource, sampler = otel.resource(), otel.env_sampler()
    names: dict[str, TraceNames] = {}

    def named(function_id: str) -> TraceNames:
        if function_id not in names:  # a function synced since: read the catalog again
            with engine.connect() as conn:
                names.update(names_in(conn))
        return names.get(function_id, TraceNames())

    try:
        while True:
            try:
                ids = pipe.recv()
            except (EOFError, OSError):
                return
            if ids is None:
                return
            for start in range(0, len(ids), EXPORT_RUNS):
                chunk = ids[start : start + EXPORT_RUNS]
                _export(chunk, engine, exporter, resource, sampler, named, payloads, counts)
            pipe.send(True)  # done: Weir may hand on the next list
    finally:
        exporter.shutdown()
        engine.dispose()


def _export(
    run_ids: Sequence[str],
    engine: Any,
    exporter: Any,
    resource: Any,
    sampler: Any,
    named: Any,
    payloads: bool,
    counts: "SynchronizedArray[Any]",
) -> None:
    spans = []
    for run_id in run_ids:
        try:
            with engine.connect() as conn:
                found = load_trace(conn, run_id, named, payloads)
        except Exception:  # the store is busy or gone: this trace is lost, not the export
            log.exception("a run's trace could not be read for export")
            counts[UNREADABLE] += 1
            continue
        if found is None or not found.ended:
            continue
        if not otel.sampled(sampler, found):
            counts[SAMPLED_OUT] += 1
            continue
        spans.extend(otel.otel_spans(found, resource))
    if spans:
        counts[EXPORTED if otel.export(exporter, spans) else FAILED] += len(spans)
