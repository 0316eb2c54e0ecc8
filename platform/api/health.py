"""Health: /health answers 200 once the platform is ready (kept for existing callers);
/health/live says the process serves HTTP; /health/ready that it can do its work: the store
answers and the scheduler runs."""

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse
from weir.platform.api.deps import platform
from weir.platform.reads.load import store_answers
from weir.platform.service import Platform

router = APIRouter()


@router.get("/health")
async def health(weir: Platform = Depends(platform)) -> JSONResponse:
    if not weir.ready:
        return JSONResponse({"status": "starting"}, 503)
    return JSONResponse({"status": "ok"})


@router.get("/health/live")
async def live() -> JSONResponse:
    # `service` lets a second `weir dev` on the same port tell a running Weir from another program
    return JSONResponse({"status": "ok", "service": "weir"})


@router.get("/health/ready")
async def ready(weir: Platform = Depends(platform)) -> JSONResponse:
    problems = [] if weir.ready else ["not started, or shutting down"]
    if weir.ready and not weir.scheduler_running:
        problems.append("the scheduler is not running")
    try:
        await weir.read(store_answers)
    except Exception as exc:  # any failure to reach the store makes the process unready
        problems.append(f"the store does not answer: {exc}")
    if problems:
        return JSONResponse({"status": "unready", "problems": problems}, 503)
    return JSONResponse({"status": "ok"})
