"""App sync: POST /fn/register (what the SDK sends after our PUT)."""

import json
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse
from weir.platform.api.deps import platform
from weir.platform.functions import SyncError
from weir.platform.service import Platform

router = APIRouter()
MAX_REGISTER_BYTES = 16 * 1024 * 1024


@router.post("/fn/register")
async def register(request: Request, weir: Platform = Depends(platform)) -> JSONResponse:
    body = await request.body()
    if len(body) > MAX_REGISTER_BYTES:
        return _error(f"the sync body is {len(body)} bytes; at most {MAX_REGISTER_BYTES}", 413)
    try:
        payload: Any = json.loads(body)
    except ValueError as exc:
        return _error(f"the sync body is not valid JSON: {exc}", 400)
    try:
        return JSONResponse(await weir.register(payload))
    except SyncError as exc:
        problems = [str(p) for p in exc.problems]
        return JSONResponse({"error": str(exc), "problems": problems}, 400)


def _error(message: str, status: int) -> JSONResponse:
    return JSONResponse({"error": message}, status)
