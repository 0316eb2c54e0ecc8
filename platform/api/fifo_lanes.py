"""FIFO lanes over REST: which lanes are busy, who holds each (since when, with which fence),
how many runs wait and which comes next; one lane's line in order. Read only.

    GET /v1/lanes?function=<slug or id>&limit=50&cursor=...   busy lanes (all functions' without
                                                              `function`)
    GET /v1/lanes?function=<slug or id>&key=acme              the lane of one key, if busy
    GET /v1/lanes/{lane}                                      one lane, by its id (`lane`)
    GET /v1/lanes/{lane}/members?limit=50&cursor=...          its runs in line, first first

Pages end with `metadata.next_cursor` (null on the last page).
"""

from typing import Any

from fastapi import APIRouter, Depends, Query
from fastapi.responses import JSONResponse
from weir.platform.api import schema_docs as docs
from weir.platform.api.deps import platform
from weir.platform.reads import lanes
from weir.platform.reads.lanes import BadPaging, LaneRow, Member, Owner
from weir.platform.registry import Function
from weir.platform.runtime.flow.fifo import lane_id
from weir.platform.service import Platform

router = APIRouter(prefix="/v1/lanes")
MAX_KEY = 512  # lanes show their keys cut to this
_LIMIT = Query(
    None, description=f"page size, 1 to {lanes.MAX_LIMIT} (default {lanes.DEFAULT_LIMIT})"
)
_CURSOR = Query(None, description="the `next_cursor` of the previous page")
_FUNCTION = Query(None, description="a function's slug or id: only the lanes its runs join")
_KEY = Query(
    None,
    description="with `function`: only the lane whose key reads this (as lanes show it), "
    "if it is busy",
)


@router.get("", responses=docs.errors(400, 401, 404))
async def list_lanes(
    function: str | None = _FUNCTION,
    key: str | None = _KEY,
    limit: str | None = _LIMIT,
    cursor: str | None = _CURSOR,
    weir: Platform = Depends(platform),
) -> JSONResponse:
    """Busy lanes (those with a holder; every lane with runs in line has one), by function."""
    owner = None
    if function is not None:
        fn = find_function(weir, function)
        if fn is None:
            return _error(f"no synced function has the slug or id {function!r}", 404)
        if fn.config.lane is None:
            return _error(f"function {fn.slug!r} declares no lane: its runs join none", 400)
        owner = Owner(fn.id, fn.config.lane.name)
        if key is not None:
            return await _one_key(weir, lane_id(fn.id, fn.config.lane, key), key)
    elif key is not None:
        return _error("key needs function: a key names a lane only within a function", 400)
    try:
        size = lanes.limit_of(limit)
        page = await weir.read(lambda c: lanes.busy_lanes(c, owner, cursor, size))
    except BadPaging as exc:
        return _error(str(exc), 400)
    data = [lane_json(weir, row) for row in page.lanes]
    return _ok(weir, data, page.next_cursor)


@router.get("/{lane}", responses=docs.errors(401, 404))
async def get_lane(lane: str, weir: Platform = Depends(platform)) -> JSONResponse:
    """One lane: its holder, fence, queue length and first run in line."""
    found = await weir.read(lambda c: lanes.lane(c, lane)) if _addressable(lane) else None
    if found is None:
        return _missing(lane)
    return _ok(weir, lane_json(weir, found))


@router.get("/{lane}/members", responses=docs.errors(400, 401, 404))
async def lane_members(
    lane: str,
    limit: str | None = _LIMIT,
    cursor: str | None = _CURSOR,
    weir: Platform = Depends(platform),
) -> JSONResponse:
    """The lane's runs in line behind its holder, first in line first."""
    if not _addressable(lane) or await weir.read(lambda c: lanes.lane(c, lane)) is None:
        return _missing(lane)
    try:
        size = lanes.limit_of(limit)
        page = await weir.read(lambda c: lanes.members(c, lane, cursor, size))
    except BadPaging as exc:
        return _error(str(exc), 400)
    return _ok(weir, [member_json(m) for m in page.members], page.next_cursor)


async def _one_key(weir: Platform, lane: str, key: str) -> JSONResponse:
    if len(key) > MAX_KEY:  # only the hash is looked up, so any text is safe to ask
        return _error(f"key must be at most {MAX_KEY} characters (as lanes show keys)", 400)
    found = await weir.read(lambda c: lanes.lane(c, lane))
    return _ok(weir, [] if found is None else [lane_json(weir, found)], None)


def find_function(weir: Platform, ident: str) -> Function | None:
    return weir.registry.by_slug.get(ident) or weir.registry.by_id.get(ident)


def lane_json(weir: Platform, row: LaneRow) -> dict[str, Any]:
    owner = Owner.of(row.scope)
    fn = weir.registry.by_id.get(owner.function_id or "")
    holder = None
    if row.holder is not None:
        holder = {
            "run_id": row.holder.run_id,
            "status": row.holder.status,
            "since": row.held_since,
            "fence": row.fence,
        }
    return {
        "lane": row.lane,
        "key": row.key,
        "function_id": owner.function_id,
        "function": None if fn is None else fn.slug,
        "name": owner.name,
        "queued": row.queued,
        "fence": row.fence,
        "holder": holder,
        "oldest_waiting": None if row.oldest is None else member_json(row.oldest),
    }


def member_json(member: Member) -> dict[str, Any]:
    return {
        "seq": member.seq,
        "run_id": member.run.run_id,
        "status": member.run.status,
        "created_at": member.run.created_at,
    }


def _addressable(lane: str) -> bool:
    """Could be a lane's id (hex hashes; PostgreSQL text cannot even hold a NUL)."""
    return 0 < len(lane) <= 64 and lane.isprintable()


def _ok(weir: Platform, data: Any, next_cursor: str | None = None) -> JSONResponse:
    meta: dict[str, Any] = {"fetched_at": weir.clock.now_ms()}
    if isinstance(data, list):
        meta["next_cursor"] = next_cursor
    return JSONResponse({"data": data, "metadata": meta})


def _error(message: str, status: int) -> JSONResponse:
    return JSONResponse({"error": message}, status)


def _missing(lane: str) -> JSONResponse:
    why = "no run holds it (GET /v1/lanes lists the busy ones)"
    return _error(f"no busy lane {lane!r}: {why}", 404)
