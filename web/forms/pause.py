"""The function page's pause form: pause the function (mode, runs under way) or resume it.
Plain form posts answered with a redirect back to the page, like every other action of the
UI; who did it is the login of the request (`api.capacity.actor_of`)."""

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import Response
from weir.platform.api.capacity import actor_of
from weir.platform.api.deps import platform
from weir.platform.foundation.vocabulary import InProgress, PauseMode
from weir.platform.runtime import pausing
from weir.platform.service import Platform
from weir.web.forms.actions import back
from weir.web.forms.login import protect_form

router = APIRouter(include_in_schema=False)


def _page(slug: str) -> str:
    return f"/functions/{slug}"


@router.post("/functions/{slug}/pause", dependencies=[Depends(protect_form)])
async def pause_function(
    slug: str,
    request: Request,
    mode: str = Form("skip"),
    in_progress: str = Form("pause"),
    weir: Platform = Depends(platform),
) -> Response:
    if mode not in set(PauseMode) or in_progress not in set(InProgress):
        allowed = f"mode {', '.join(PauseMode)}; runs under way {', '.join(InProgress)}"
        given = f"mode {mode!r}, runs under way {in_progress!r}"
        return back(_page(slug), problem=f"Not paused: {given}; allowed: {allowed}.")
    bound = weir.settings.paused_run_bound_ms
    asked = pausing.PauseAsked(
        slug, PauseMode(mode), InProgress(in_progress), actor_of(request, None), bound
    )
    try:
        done = await weir.pause(asked)
    except pausing.FunctionNotFound as missing:
        return back("/functions", problem=f"Not paused: {missing}.")
    cancelled = f"; {done.cancelled} runs under way cancelled" if done.cancelled else ""
    return back(_page(slug), flash=f"Paused ({mode}){cancelled}.")


@router.post("/functions/{slug}/resume", dependencies=[Depends(protect_form)])
async def resume_function(
    slug: str, request: Request, weir: Platform = Depends(platform)
) -> Response:
    try:
        await weir.resume(slug, actor_of(request, None))
    except pausing.FunctionNotFound as missing:
        return back("/functions", problem=f"Not resumed: {missing}.")
    except pausing.NotPaused as exc:
        return back(_page(slug), problem=f"Not resumed: {exc}.")
    return back(_page(slug), flash="Resumed: its runs go on in their order, through every gate.")
