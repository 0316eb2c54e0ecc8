"""FIFO lanes in the UI: a function's busy lanes (holder, since when, fence, queue length, the
run next in line), paged, and one lane's line in order. Read only, through the same read
model as `GET /v1/lanes`."""

from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse
from weir.platform.api.deps import platform
from weir.platform.reads import lanes
from weir.platform.reads.lanes import BadPaging, LaneRow, Owner
from weir.platform.registry import Function
from weir.platform.runtime.flow.fifo import lane_id
from weir.platform.service import Platform
from weir.web.display import clock
from weir.web.errors import NotFound
from weir.web.render import page

router = APIRouter(include_in_schema=False)
PANEL_ROWS = 10  # on the function's own page; its lanes page shows more, paged


async def lane_panel(
    weir: Platform, fn: Function, cursor: str | None = None, limit: int = PANEL_ROWS
) -> dict[str, Any] | None:
    """The function's busy lanes for display; None when it declares no lane."""
    option = fn.config.lane
    if option is None:
        return None
    owner = Owner(fn.id, option.name)
    try:
        found = await weir.read(lambda c: lanes.busy_lanes(c, owner, cursor, limit))
    except BadPaging as exc:
        raise NotFound("No such page of lanes", f"{exc}.") from None
    return {
        "name": option.name,
        "rows": [_row(row) for row in found.lanes],
        "next": found.next_cursor,
    }


@router.get("/functions/{slug}/lanes")
async def function_lanes_page(
    request: Request,
    slug: str,
    cursor: str = "",
    key: str | None = None,
    weir: Platform = Depends(platform),
) -> HTMLResponse:
    fn = weir.registry.by_slug.get(slug)
    if fn is None:
        raise NotFound("Function not found", f"There is no function with id {slug!r}.")
    option = fn.config.lane
    if option is None:
        raise NotFound("No lanes", f"Function {slug!r} declares no lane: its runs join none.")
    if key is not None:  # one lane, by the key it shows, if it is busy
        one = await weir.read(lambda c: lanes.lane(c, lane_id(fn.id, option, key)))
        panel: dict[str, Any] | None = {
            "name": option.name,
            "rows": [] if one is None else [_row(one)],
            "next": None,
        }
    else:
        panel = await lane_panel(weir, fn, cursor or None, lanes.DEFAULT_LIMIT)
    f = {"slug": fn.slug, "name": fn.config.name}
    return page(request, "lanes.html", f=f, panel=panel, key=key)


@router.get("/lanes/{lane}")
async def lane_page(
    request: Request, lane: str, cursor: str = "", weir: Platform = Depends(platform)
) -> HTMLResponse:
    if not 0 < len(lane) <= 64 or not lane.isprintable():
        raise NotFound("Lane not found", f"There is no lane {lane!r}.")
    found = await weir.read(lambda c: lanes.lane(c, lane))
    if found is None:
        why = f"No run holds or waits in lane {lane!r}: a lane is shown while it is busy."
        raise NotFound("Lane not found", why)
    try:
        line = await weir.read(lambda c: lanes.members(c, lane, cursor or None, 50))
    except BadPaging as exc:
        raise NotFound("No such page of the line", f"{exc}.") from None
    members = [
        {
            "seq": m.seq,
            "run_id": m.run.run_id,
            "status": m.run.status or "deleted",
            "created": clock(m.run.created_at),
        }
        for m in line.members
    ]
    owner = Owner.of(found.scope)
    fn = weir.registry.by_id.get(owner.function_id or "")
    return page(
        request,
        "lane.html",
        lane=_row(found),
        owner_slug=None if fn is None else fn.slug,
        owner_name=owner.name,
        members=members,
        next=line.next_cursor,
    )


def _row(row: LaneRow) -> dict[str, Any]:
    return {
        "lane": row.lane,
        "key": row.key,
        "holder": None if row.holder is None else row.holder.run_id,
        "holder_status": None if row.holder is None else row.holder.status,
        "since": clock(row.held_since),
        "fence": row.fence,
        "queued": row.queued,
        "next": None if row.oldest is None else row.oldest.run.run_id,
    }
