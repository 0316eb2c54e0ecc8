"""Operators' side of webhook sources: create, change (at the revision read), delete, list,
apply a declarative file, preview a sample payload, list deliveries. REST, the CLI and the UI
all come through here."""

import json
from typing import Any

from weir.platform.foundation.record_type import record
from weir.platform.runtime.tx import Tx
from weir.platform.service import Platform
from weir.platform.store.records import webhooks as rows
from weir.platform.webhooks import receive
from weir.platform.webhooks import source as sources
from weir.platform.webhooks.delivery import Received, Status
from weir.platform.webhooks.receive import build
from weir.platform.webhooks.source import Source, SourceError

MAX_LIST = 200


class NotFound(LookupError):
    pass


class Conflict(Exception):
    pass


@record
class Saved:
    id: str
    source: Source
    revision: int
    created_at: int
    updated_at: int


def _saved(stored: rows.StoredSource) -> Saved:
    return Saved(
        stored.id,
        sources.from_json(stored.config),
        stored.revision,
        stored.created_at,
        stored.updated_at,
    )


def describe(saved: Saved) -> dict[str, Any]:
    """A source as the API shows it: secrets by their last characters only."""
    return {
        "id": saved.id,
        "path": f"/webhooks/{saved.id}",
        "revision": saved.revision,
        "created_at": saved.created_at,
        "updated_at": saved.updated_at,
    } | sources.as_input(saved.source, with_secrets=False)


async def create(weir: Platform, payload: Any) -> Saved:
    source = sources.parse(payload)
    now = weir.clock.now_ms()
    stored = rows.StoredSource(sources.new_id(), source.name, sources.to_json(source), 1, now, now)

    def job(tx: Tx) -> None:
        if rows.source(tx.conn, source.name) is not None:
            raise Conflict(f"a webhook source named {source.name!r} exists; change it instead")
        rows.insert_source(tx.conn, stored)

    await weir.write(job)
    return _saved(stored)


async def get(weir: Platform, ident: str) -> Saved:
    stored = await weir.read(lambda conn: rows.source(conn, ident))
    if stored is None:
        raise NotFound(f"no webhook source {ident!r} (see GET /v1/webhooks)")
    return _saved(stored)


async def listed(weir: Platform) -> list[Saved]:
    return [_saved(s) for s in await weir.read(rows.sources)]


async def update(weir: Platform, ident: str, payload: Any, revision: Any) -> Saved:
    """Replace the source's settings, keeping its id (its URL). Omitted secrets are kept."""
    if type(revision) is not int or revision < 1:
        raise SourceError(
            [
                "revision must be the integer revision you read (changes apply only "
                "if nobody changed the source meanwhile)"
            ]
        )
    current = await get(weir, ident)
    source = sources.parse(payload, keep_secrets=current.source.secrets)
    now = weir.clock.now_ms()

    def job(tx: Tx) -> None:
        other = rows.source(tx.conn, source.name)
        if other is not None and other.id != current.id:
            raise Conflict(f"another webhook source is named {source.name!r}")
        config = sources.to_json(source)
        if not rows.update_source(tx.conn, current.id, source.name, config, revision, now):
            raise Conflict(
                f"webhook source {ident!r} is not at revision {revision}: it changed "
                "meanwhile; read it again and retry"
            )

    await weir.write(job)
    receive.KNOWN.forget(current.id)
    return Saved(current.id, source, revision + 1, current.created_at, now)


async def delete(weir: Platform, ident: str) -> None:
    current = await get(weir, ident)
    await weir.write(lambda tx: rows.delete_source(tx.conn, current.id))
    receive.KNOWN.forget(current.id)


async def apply_file(weir: Platform, payloads: Any) -> list[tuple[str, Saved]]:
    """A declarative file's sources, by name: created, changed or left as they are (each one
    checked before any is written, so a bad file changes nothing)."""
    if not isinstance(payloads, list):
        raise SourceError(["a webhooks file holds a list of sources (`webhooks: [...]`)"])
    problems: list[str] = []
    for index, payload in enumerate(payloads):
        try:
            sources.parse(payload)
        except SourceError as exc:
            problems += [f"webhooks[{index}]: {p}" for p in exc.problems]
    names = [p.get("name") for p in payloads if isinstance(p, dict)]
    problems += [f"the name {n!r} appears twice" for n in set(names) if names.count(n) > 1]
    if problems:
        raise SourceError(problems)
    done: list[tuple[str, Saved]] = []
    for payload in payloads:
        try:
            current = await get(weir, payload["name"])
        except NotFound:
            done.append(("created", await create(weir, payload)))
            continue
        if sources.parse(payload) == current.source:
            done.append(("unchanged", current))
        else:
            done.append(("changed", await update(weir, current.id, payload, current.revision)))
    return done


def sample_of(payload: Any) -> Received:
    """A sample delivery: {"body": <JSON or text>, "headers": {...}, "query": {...}}."""
    if not isinstance(payload, dict):
        raise SourceError(['a sample is {"body": ..., "headers": {...}, "query": {...}}'])
    body = payload.get("body")
    text = body if isinstance(body, str) else json.dumps(body)
    headers, query = payload.get("headers") or {}, payload.get("query") or {}
    if not _strings(headers) or not _strings(query):
        raise SourceError(["sample headers and query are objects of strings"])
    headers = {k.lower(): v for k, v in headers.items()}
    if not isinstance(body, str):
        headers.setdefault("content-type", "application/json")
    return Received(text.encode(), headers, dict(query))


def _strings(value: Any) -> bool:
    return isinstance(value, dict) and all(isinstance(v, str) for v in value.values())


async def preview(weir: Platform, source: Source, sample: Received) -> dict[str, Any]:
    """The event the sample would become (no signature is checked, nothing is stored), or
    the refusal it would get."""
    built = await build(source, sample, weir.clock.now_ms())
    if built.event is None:
        assert built.reason is not None
        return {"event": None, "reason": built.reason.value, "error": built.message}
    event = built.event
    shown: dict[str, Any] = {"name": event.name, "data": event.data, "ts": event.ts}
    if event.user_id is not None:
        shown["id"] = event.user_id
    return {"event": shown}


def delivery_json(found: rows.StoredDelivery) -> dict[str, Any]:
    return {
        "id": found.id,
        "received_at": found.received_at,
        "status": found.status,
        "reason": found.reason,
        "message": found.message,
        "event_id": found.event_id,
        "replayable": found.status == Status.REFUSED and found.body is not None,
    }


async def deliveries(
    weir: Platform,
    ident: str,
    *,
    status: str | None,
    reason: str | None,
    before: str | None,
    limit: int,
) -> list[rows.StoredDelivery]:
    current = await get(weir, ident)
    return await weir.read(
        lambda conn: rows.deliveries(
            conn,
            current.id,
            status=status,
            reason=reason,
            before=before,
            limit=min(max(limit, 1), MAX_LIST),
        )
    )
