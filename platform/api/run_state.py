"""The run-state API the SDK calls when a request says `use_api` (docs/protocol.md §7.3)."""

from typing import Any

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse
from weir.platform.api import schema_docs as docs
from weir.platform.api.deps import platform
from weir.platform.service import Platform
from weir.platform.store import records, run_records, step_records

router = APIRouter(prefix="/v0/runs")


@router.get("/{run_id}/batch", responses=docs.errors(401, 404))
async def run_events(run_id: str, weir: Platform = Depends(platform)) -> JSONResponse:
    def load(conn: Any) -> list[dict[str, Any]] | None:
        run = run_records.get_run(conn, run_id)
        return None if run is None else records.load_event_payloads(conn, list(run.event_ids))

    found = await weir.read(load)
    return _missing(run_id) if found is None else JSONResponse(found)


@router.get("/{run_id}/actions", responses=docs.errors(401, 404))
async def run_steps(run_id: str, weir: Platform = Depends(platform)) -> JSONResponse:
    def load(conn: Any) -> dict[str, Any] | None:
        if run_records.get_run(conn, run_id) is None:
            return None
        return {m.step_id: m.memo for m in step_records.list_steps(conn, run_id)}

    found = await weir.read(load)
    return _missing(run_id) if found is None else JSONResponse(found)


def _missing(run_id: str) -> JSONResponse:
    return JSONResponse({"error": f"no run with id {run_id!r}"}, 404)
