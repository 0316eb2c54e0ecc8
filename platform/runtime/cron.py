"""Cron triggers: each tick is a durable timer item, so it fires once even across restarts.
Fire times come from APScheduler's cron trigger (5 fields, optional time zone)."""

import hashlib
from datetime import UTC, datetime
from typing import Any

from weir.platform.foundation.ids import new_id
from weir.platform.foundation.vocabulary import EventOutcome, QueueKind, SystemEvent
from weir.platform.functions import CronTrigger
from weir.platform.functions.parse.cron_dow import aps_cron
from weir.platform.ingest.validate import IncomingEvent, event_payload
from weir.platform.registry import Function
from weir.platform.runtime.flow.candidate import Candidate
from weir.platform.runtime.runs import enqueue_timer
from weir.platform.runtime.tx import Tx
from weir.platform.store.records import events as event_records


def next_fire_ms(trigger: CronTrigger, after_ms: int) -> int | None:
    """The first fire time strictly after `after_ms` (APScheduler rounds up to a second)."""
    after = datetime.fromtimestamp((after_ms + 1) / 1000, tz=UTC)
    fire = aps_cron(trigger.cron, trigger.timezone or "UTC").get_next_fire_time(None, after)
    return None if fire is None else int(fire.timestamp() * 1000)


def ensure_ticks(tx: Tx) -> None:
    for fn, trigger in tx.registry.crons():
        schedule_next(tx, fn, trigger, tx.now)


def schedule_next(tx: Tx, fn: Function, trigger: CronTrigger, after_ms: int) -> None:
    fire = next_fire_ms(trigger, after_ms)
    if fire is None:
        return
    at = fire + _jitter(fn, trigger, fire)
    payload = {
        "cron": trigger.cron,
        "tz": trigger.timezone,
        "fire": fire,
        "jitter": trigger.jitter_ms,
    }
    enqueue_timer(
        tx,
        QueueKind.CRON,
        at,
        payload,
        function_id=fn.id,
        dedupe=f"cron:{fn.id}:{trigger.timezone}:{trigger.cron}:{fire}",
    )


def _jitter(fn: Function, trigger: CronTrigger, fire: int) -> int:
    if trigger.jitter_ms <= 0:
        return 0
    digest = hashlib.sha256(f"{fn.id}:{fire}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % trigger.jitter_ms


def on_tick(tx: Tx, item: Any) -> Candidate | None:
    """Store this tick's event and schedule the next tick; returns the run to admit."""
    fn = tx.registry.by_id.get(item.function_id or "")
    trigger = _current_trigger(fn, item.payload)
    if fn is None or fn.archived or trigger is None:
        return None  # the function or this schedule is gone: the chain ends here
    fire = int(item.payload["fire"])
    cand = _fire(tx, fn, trigger, fire)
    schedule_next(tx, fn, trigger, fire)
    pause = tx.registry.paused.get(fn.id) if tx.registry.paused else None
    if pause is not None:  # in either mode: a tick fires no run, its event is kept for replay
        words = f"skipped: function paused ({pause.mode}) by {pause.paused_by}"
        event_records.record_outcome(
            tx.conn, cand.event_ids[0], fn.id, EventOutcome.FUNCTION_PAUSED, None, words, tx.now
        )
        return None
    return cand


def _current_trigger(fn: Function | None, payload: dict[str, Any]) -> CronTrigger | None:
    if fn is None:
        return None
    for trigger in fn.config.triggers:
        if (
            isinstance(trigger, CronTrigger)
            and trigger.cron == payload["cron"]
            and trigger.timezone == payload.get("tz")
        ):
            return trigger
    return None


def _fire(tx: Tx, fn: Function, trigger: CronTrigger, fire: int) -> Candidate:
    scheduled = _rfc3339(fire)
    data = {"cron": trigger.cron, "scheduledAt": scheduled, "fireAt": _rfc3339(tx.now)}
    incoming = IncomingEvent(
        name=SystemEvent.SCHEDULED_TIMER, data=data, user_id=scheduled, ts=tx.now, user={}, v=None
    )
    event_id = new_id(tx.now)
    payload = event_payload(incoming, event_id)
    event_records.insert_events(
        tx.conn,
        [
            event_records.StoredEvent(
                event_id, SystemEvent.SCHEDULED_TIMER, scheduled, tx.now, tx.now, payload
            )
        ],
    )
    return Candidate(fn, [event_id], [payload], tx.now, cron=trigger.cron)


def _rfc3339(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat().replace("+00:00", "Z")
