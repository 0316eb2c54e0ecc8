"""App sync: POST /fn/register (what the SDK sends after our PUT)."""

from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse
from weir.platform.api import schema_docs as docs
from weir.platform.api.deps import platform
from weir.platform.executor import app_hosts
from weir.platform.foundation import jsonvalues
from weir.platform.functions import SyncError
from weir.platform.security.bodies import BodyTooLarge, read_capped
from weir.platform.service import Platform

router = APIRouter()
MAX_REGISTER_BYTES = 16 * 1024 * 1024


@router.post(
    "/fn/register", openapi_extra=docs.json_body(docs.SYNC), responses=docs.errors(400, 401, 413)
)
async def register(request: Request, weir: Platform = Depends(platform)) -> JSONResponse:
    try:
        payload: Any = jsonvalues.loads(await read_capped(request, MAX_REGISTER_BYTES, "sync body"))
    except BodyTooLarge as exc:
        return _error(str(exc), 413)
    except ValueError as exc:
        return _error(f"the sync body is not valid JSON: {exc}", 400)
    unkeepable = jsonvalues.problem(payload)
    if unkeepable:
        return _error(f"the sync body cannot be kept: {unkeepable}", 400)
    hosts = app_hosts.sync_problems(payload, weir.settings.allowed_app_hosts)
    if hosts:
        return JSONResponse({"error": "; ".join(hosts), "problems": hosts}, 400)
    try:
        return JSONResponse(await weir.register(payload))
    except SyncError as exc:
        problems = [str(p) for p in exc.problems]
        return JSONResponse({"error": str(exc), "problems": problems}, 400)


def _error(message: str, status: int) -> JSONResponse:
    return JSONResponse({"error": message}, status)
