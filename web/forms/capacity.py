"""The Functions page's capacity forms: set a live capacity, or reset it to the declared value.
Plain form posts answered with a redirect, like every other action of the UI."""

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import Response
from weir.platform.api.capacity import actor_of
from weir.platform.api.deps import platform
from weir.platform.runtime.capacity import live as capacities
from weir.platform.service import Platform
from weir.web.forms.actions import back
from weir.web.forms.login import protect_form

router = APIRouter(include_in_schema=False)
PAGE = "/functions"


@router.post("/functions/capacity/{cap_id}/set", dependencies=[Depends(protect_form)])
async def set_capacity(
    cap_id: str,
    request: Request,
    capacity: str = Form(""),
    revision: str = Form(""),
    weir: Platform = Depends(platform),
) -> Response:
    return await _change(request, weir, cap_id, capacity, revision)


@router.post("/functions/capacity/{cap_id}/reset", dependencies=[Depends(protect_form)])
async def reset_capacity(
    cap_id: str, request: Request, revision: str = Form(""), weir: Platform = Depends(platform)
) -> Response:
    return await _change(request, weir, cap_id, None, revision)


async def _change(
    request: Request, weir: Platform, cap_id: str, size_text: str | None, revision_text: str
) -> Response:
    size = _int(size_text) if size_text is not None else None
    revision = _int(revision_text)
    problem = capacities.check(size, revision, needs_size=size_text is not None)
    if problem is not None:
        return back(PAGE, problem=f"Capacity not changed: {problem}.")
    assert isinstance(revision, int) and (size is None or isinstance(size, int))  # checked above
    req = capacities.Request(cap_id, size, revision, actor_of(request, None))
    try:
        done = await weir.write(lambda tx: capacities.change(tx, req))
    except capacities.CapacityNotFound as missing:
        return back(PAGE, problem=f"Capacity not changed: {missing}.")
    except capacities.RevisionConflict as conflict:
        return back(PAGE, problem=f"Capacity not changed: {conflict}.")
    except capacities.CapacityOutOfRange as wrong:
        return back(PAGE, problem=f"Capacity not changed: {wrong}.")
    return back(PAGE, flash=f"{done.name}: capacity {done.capacity} (revision {done.revision}).")


def _int(text: str) -> int | str:
    try:
        return int(text.strip())
    except ValueError:
        return text
