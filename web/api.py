"""JSON for the pages' polling: the newest runs and events, and one run's progress."""

from typing import Any

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse
from weir.platform.api.deps import platform
from weir.platform.reads.runs import run_view
from weir.platform.service import Platform
from weir.platform.vocabulary import ENDED
from weir.web import data, timeline

router = APIRouter(prefix="/ui/api", include_in_schema=False)


@router.get("/runs")
async def runs(
    function: str = "",
    status: str = "",
    range: str = "",
    before: str = "",
    limit: int = 50,
    weir: Platform = Depends(platform),
) -> dict[str, Any]:
    return await data.run_list(weir, data.RunFilter(function, status, range, before), limit)


@router.get("/runs/{run_id}")
async def run_progress(run_id: str, weir: Platform = Depends(platform)) -> Any:
    """Enough to tell whether the run page is stale: status and how much history it has."""
    now = weir.clock.now_ms()
    view = await weir.read(lambda c: run_view(c, run_id, now))
    if view is None:
        return JSONResponse({"error": f"no run with id {run_id!r}"}, 404)
    return {
        "id": run_id,
        "status": view.run.status,
        "ended": view.run.status in ENDED,
        # the run page reloads when this differs from the `progress` it was rendered with
        "progress": view.progress,
        "reasons": timeline.waiting_reasons(view.run, view.history, now),
    }


@router.get("/events")
async def events(
    name: str = "", before: str = "", limit: int = 30, weir: Platform = Depends(platform)
) -> dict[str, Any]:
    return await data.event_list(weir, name, before, limit)
