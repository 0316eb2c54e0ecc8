"""Health: answers 200 once the platform is ready."""

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse
from weir.platform.api.deps import platform
from weir.platform.service import Platform

router = APIRouter()


@router.get("/health")
async def health(weir: Platform = Depends(platform)) -> JSONResponse:
    if not weir.ready:
        return JSONResponse({"status": "starting"}, 503)
    return JSONResponse({"status": "ok"})
