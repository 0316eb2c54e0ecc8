"""JSON for the pages' polling: the newest runs and events, and one run's progress."""

from typing import Any

from fastapi import APIRouter, Depends, Query
from fastapi.responses import JSONResponse
from weir.platform.api import run_reads
from weir.platform.api.deps import platform
from weir.platform.foundation.vocabulary import ENDED
from weir.platform.service import Platform
from weir.web import data

router = APIRouter(prefix="/ui/api", include_in_schema=False)


@router.get("/runs")
async def runs(
    function: str = "",
    status: list[str] = Query([]),
    range: str = "",
    before: str = "",
    search: str = "",
    query: str = "",
    limit: int = 50,
    weir: Platform = Depends(platform),
) -> Any:
    wanted = data.RunFilter(function, tuple(status), range, before, search, query)
    try:
        return await data.run_list(weir, wanted, limit)
    except data.BadQuery as error:
        return JSONResponse({"error": str(error)}, 400)


@router.get("/runs/{run_id}")
async def run_progress(run_id: str, weir: Platform = Depends(platform)) -> Any:
    """Enough to tell whether the run page is stale: status and how much history it has."""
    view = await run_reads.run_view(weir, run_id)
    if view is None:
        return JSONResponse({"error": f"no run with id {run_id!r}"}, 404)
    return {
        "id": run_id,
        "status": view.run.status,
        "ended": view.run.status in ENDED,
        # the run page reloads when this differs from the `progress` it was rendered with
        "progress": view.progress,
        # the run state's words (reads/run_state.py), then those of its other open steps
        "reasons": [s.words for s in (view.state, *view.state.also)] if not view.run.ended else [],
    }


@router.get("/events")
async def events(
    name: str = "",
    before: str = "",
    system: bool = False,
    query: str = "",
    limit: int = 30,
    weir: Platform = Depends(platform),
) -> Any:
    try:
        return await data.event_list(weir, name, before, limit, system=system, cel=query)
    except data.BadQuery as error:
        return JSONResponse({"error": str(error)}, 400)
