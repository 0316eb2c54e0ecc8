"""The run-state API the SDK calls when a request says `use_api` (docs/protocol.md §7.3)."""

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse
from weir.platform.api import schema_docs as docs
from weir.platform.api.deps import platform
from weir.platform.reads import runs
from weir.platform.service import Platform

router = APIRouter(prefix="/v0/runs")


@router.get("/{run_id}/batch", responses=docs.errors(401, 404))
async def run_events(run_id: str, weir: Platform = Depends(platform)) -> JSONResponse:
    found = await weir.read(lambda c: runs.run_event_payloads(c, run_id))
    return _missing(run_id) if found is None else JSONResponse(found)


@router.get("/{run_id}/actions", responses=docs.errors(401, 404))
async def run_steps(run_id: str, weir: Platform = Depends(platform)) -> JSONResponse:
    found = await weir.read(lambda c: runs.run_memos(c, run_id))
    return _missing(run_id) if found is None else JSONResponse(found)


def _missing(run_id: str) -> JSONResponse:
    return JSONResponse({"error": f"no run with id {run_id!r}"}, 404)
