"""A delivery's way in: verify, transform, ingest, and note it, accepted or refused. The
answer says what a provider should do: 2xx only once the event is committed, 4xx for what a
retry cannot change, 5xx (with Retry-After) only for what a retry may get past."""

import asyncio
import json
from functools import lru_cache
from typing import Any

from sqlalchemy.exc import SQLAlchemyError
from weir.platform.foundation.ids import new_id
from weir.platform.foundation.record_type import record
from weir.platform.ingest.validate import EventError, IncomingEvent, validate_event
from weir.platform.runtime.tx import Tx
from weir.platform.service import Platform
from weir.platform.store.records import webhooks as rows
from weir.platform.webhooks import challenge, transform
from weir.platform.webhooks import source as sources
from weir.platform.webhooks.delivery import (
    REPLAYABLE,
    Reason,
    Received,
    Status,
    Unreadable,
    activation,
    headers_json,
)
from weir.platform.webhooks.source import Source
from weir.platform.webhooks.verify.failure import VerificationFailed
from weir.platform.webhooks.verify.schemes import verify

STATUS_OF = {
    Reason.MISSING_SIGNATURE: 401,
    Reason.BAD_SIGNATURE: 401,
    Reason.STALE_TIMESTAMP: 400,
    Reason.FUTURE_TIMESTAMP: 400,
    Reason.TOO_LARGE: 413,
    Reason.UNREADABLE_BODY: 400,
    Reason.TRANSFORM_ERROR: 422,
    Reason.TRANSFORM_BUDGET: 422,
    Reason.INVALID_EVENT: 422,
}
RETRY_AFTER_S = 5  # when the store could not commit
SOURCE_CACHE_MS = 1000  # how long a process goes on using a source read (see `Known`)
MAX_KNOWN = 1000
# A larger body is parsed and its event checked on a thread: ~20 ms a MiB that the event loop
# would otherwise not answer anyone else in (POST /e/ hands such bodies to worker processes)
ON_LOOP_BYTES = 64 * 1024


@record
class Answer:
    status: int
    body: dict[str, Any]
    retry_after_s: int | None = None


@record
class Built:
    """A delivery turned into an event, or why not."""

    event: IncomingEvent | None
    reason: Reason | None = None
    message: str | None = None


@lru_cache(maxsize=256)
def _parsed(config: str) -> Source:
    return sources.from_json(config)  # checked when saved; parsed once per stored version


class Known:
    """Sources read lately, by id, for SOURCE_CACHE_MS: a delivery then costs no read before
    its rate limit and signature are checked. Changes made through this process apply at
    once (`forget`); those made through another process within SOURCE_CACHE_MS."""

    def __init__(self) -> None:
        self._found: dict[str, tuple[Source, int]] = {}

    def get(self, source_id: str, now_ms: int) -> Source | None:
        found = self._found.get(source_id)
        if found is None or now_ms - found[1] >= SOURCE_CACHE_MS:
            return None
        return found[0]

    def put(self, source_id: str, source: Source, now_ms: int) -> None:
        self._found.pop(source_id, None)
        self._found[source_id] = (source, now_ms)
        if len(self._found) > MAX_KNOWN:
            del self._found[next(iter(self._found))]

    def forget(self, source_id: str) -> None:
        self._found.pop(source_id, None)


KNOWN = Known()


async def find(weir: Platform, source_id: str) -> Source | None:
    now = weir.clock.now_ms()
    known = KNOWN.get(source_id, now)
    if known is not None:
        return known
    stored = await weir.read(lambda conn: rows.source_by_id(conn, source_id))
    if stored is None:
        return None
    source = _parsed(stored.config)
    KNOWN.put(source_id, source, now)
    return source


def _refused(reason: Reason, message: str, delivery_id: str) -> Answer:
    body = {"status": STATUS_OF[reason], "error": message, "reason": reason.value}
    return Answer(STATUS_OF[reason], body | {"delivery": delivery_id})


async def refuse(
    weir: Platform, source_id: str, reason: Reason, message: str, keep: Received | None = None
) -> Answer:
    """Note the refusal (with the delivery, if it can be replayed) and answer it."""
    now = weir.clock.now_ms()
    delivery_id = new_id(now)
    stored = rows.StoredDelivery(
        delivery_id,
        source_id,
        now,
        Status.REFUSED.value,
        reason.value,
        message,
        None,
        keep.body if keep is not None else None,
        headers_json(keep) if keep is not None else None,
        json.dumps(keep.query) if keep is not None else None,
    )
    try:
        await weir.write(lambda tx: rows.insert_delivery(tx.conn, stored))
    except SQLAlchemyError:
        return _unavailable()
    return _refused(reason, message, delivery_id)


def _unavailable() -> Answer:
    body = {"status": 503, "error": "the store could not commit the delivery: retry shortly"}
    return Answer(503, body, RETRY_AFTER_S)


async def build(source: Source, received: Received, now_ms: int) -> Built:
    """The event the source's transform makes of a (verified) delivery."""
    large = len(received.body) >= ON_LOOP_BYTES
    try:
        seen = await asyncio.to_thread(activation, received) if large else activation(received)
    except Unreadable as exc:
        return Built(None, Reason.UNREADABLE_BODY, str(exc))
    try:
        item = await transform.apply(source.transform, seen)
    except transform.TransformFailed as exc:
        reason = (
            Reason.TRANSFORM_BUDGET
            if exc.reason == transform.TransformReason.BUDGET
            else Reason.TRANSFORM_ERROR
        )
        return Built(None, reason, str(exc))
    try:
        if large:
            return Built(await asyncio.to_thread(validate_event, item, 0, now_ms))
        return Built(validate_event(item, 0, now_ms))
    except EventError as exc:
        return Built(None, Reason.INVALID_EVENT, f"the transform's event: {exc}")


async def deliver(weir: Platform, source_id: str, source: Source, received: Received) -> Answer:
    now = weir.clock.now_ms()
    try:
        verify(
            source.scheme,
            source.hmac,
            received.body,
            received.headers,
            source.secrets,
            now / 1000,
            source.tolerance_s,
        )
    except VerificationFailed as failed:
        return await refuse(weir, source_id, Reason(failed.refusal.value), str(failed))
    expected = challenge.answer_to(source.scheme, received)
    if expected is not None:
        return await _answered_check(weir, source_id, now, expected)
    built = await build(source, received, now)
    if built.event is None:
        assert built.reason is not None and built.message is not None
        keep = received if built.reason in REPLAYABLE else None
        return await refuse(weir, source_id, built.reason, built.message, keep)
    delivery_id = new_id(now)

    def noted(tx: Tx, ids: list[str]) -> None:
        accepted = rows.StoredDelivery(
            delivery_id, source_id, now, Status.ACCEPTED.value, None, None, ids[0], None, None, None
        )
        rows.insert_delivery(tx.conn, accepted)

    try:
        ids = await weir.ingest([built.event], noted)
    except SQLAlchemyError:
        return _unavailable()
    return Answer(200, {"status": 200, "ids": ids, "delivery": delivery_id})


async def _answered_check(
    weir: Platform, source_id: str, now: int, expected: dict[str, Any]
) -> Answer:
    """Noted as accepted without an event: the provider's URL check passed."""
    noted = rows.StoredDelivery(
        new_id(now), source_id, now, Status.ACCEPTED.value, None,
        "the provider's URL check, answered (no event)", None, None, None, None,
    )  # fmt: skip
    try:
        await weir.write(lambda tx: rows.insert_delivery(tx.conn, noted))
    except SQLAlchemyError:
        return _unavailable()
    return Answer(200, expected)


class ReplayRefused(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


async def replay(weir: Platform, source_id: str, delivery_id: str) -> Answer:
    """A refused delivery again, through the source's transform as it is now; its record
    becomes `replayed` with the event, in the event's transaction (so at most once)."""
    found = await weir.read(lambda conn: rows.delivery(conn, delivery_id))
    if found is None or found.source_id != source_id:
        raise ReplayRefused(404, f"no delivery {delivery_id!r} of this source")
    if found.status != Status.REFUSED or found.reason not in REPLAYABLE or found.body is None:
        allowed = ", ".join(sorted(REPLAYABLE))
        raise ReplayRefused(
            409,
            f"delivery {delivery_id} is {found.status} ({found.reason or 'no reason'}); only "
            f"refused deliveries whose signature held may be replayed (reasons: {allowed})",
        )
    source = await find(weir, source_id)
    if source is None:
        raise ReplayRefused(404, "the source no longer exists")
    received = Received(
        found.body, json.loads(found.headers or "{}"), json.loads(found.query or "{}")
    )
    built = await build(source, received, weir.clock.now_ms())
    if built.event is None:
        assert built.reason is not None and built.message is not None
        return _refused(built.reason, built.message, delivery_id)

    def noted(tx: Tx, ids: list[str]) -> None:
        if not rows.mark_replayed(tx.conn, delivery_id, Status.REPLAYED.value, ids[0], None):
            raise ReplayRefused(409, f"delivery {delivery_id} was replayed meanwhile")

    try:
        ids = await weir.ingest([built.event], noted)
    except SQLAlchemyError:
        return _unavailable()
    return Answer(200, {"status": 200, "ids": ids, "delivery": delivery_id})
