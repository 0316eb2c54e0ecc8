"""Webhook sources in the UI: the list, one source with its settings and its deliveries
(filtered by status and reason), a sample payload tried through its transform, a refused
delivery replayed, and a source created or changed as the JSON the API takes. Everything goes
through the same operations as /v1/webhooks (platform/webhooks/manage.py)."""

import json
from typing import Any

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import HTMLResponse, Response
from weir.platform.api.deps import platform
from weir.platform.service import Platform
from weir.platform.webhooks import manage, receive
from weir.platform.webhooks import source as sources
from weir.platform.webhooks.delivery import Reason, Status
from weir.platform.webhooks.source import SourceError
from weir.web.display import clock
from weir.web.errors import NotFound
from weir.web.forms.actions import back
from weir.web.forms.login import protect_form
from weir.web.render import page

router = APIRouter(include_in_schema=False)
PAGE = "/webhook-sources"
EXAMPLE = {
    "name": "stripe-prod",
    "scheme": "stripe",
    "secrets": ["whsec_..."],
    "transform": {"name": "'stripe/' + body.type", "data": "body", "id": "body.id"},
}


async def _source(weir: Platform, name: str) -> manage.Saved:
    try:
        return await manage.get(weir, name)
    except manage.NotFound:
        raise NotFound(
            "Webhook source not found", f"There is no webhook source {name!r}."
        ) from None


@router.get(PAGE)
async def sources_page(request: Request, weir: Platform = Depends(platform)) -> HTMLResponse:
    listed = [manage.describe(s) for s in await manage.listed(weir)]
    example = json.dumps(EXAMPLE, indent=2)
    return page(request, "webhooks.html", sources=listed, example=example)


@router.get(PAGE + "/{name}")
async def source_page(
    request: Request,
    name: str,
    status: str = "",
    reason: str = "",
    weir: Platform = Depends(platform),
) -> HTMLResponse:
    return await _render(request, weir, name, status, reason)


async def _render(
    request: Request,
    weir: Platform,
    name: str,
    status: str = "",
    reason: str = "",
    tried: dict[str, Any] | None = None,
    sample: str = "",
) -> HTMLResponse:
    saved = await _source(weir, name)
    shown = manage.describe(saved)
    found = await manage.deliveries(
        weir,
        saved.id,
        status=status if status in set(Status) else None,
        reason=reason if reason in set(Reason) else None,
        before=None,
        limit=100,
    )
    editable = sources.as_input(saved.source, with_secrets=False)
    editable.pop("secrets")  # a change without secrets keeps them
    return page(
        request,
        "webhook.html",
        s=shown,
        settings=json.dumps(editable, indent=2, ensure_ascii=False),
        deliveries=[manage.delivery_json(d) | {"at": clock(d.received_at)} for d in found],
        statuses=[s.value for s in Status],
        reasons=[r.value for r in Reason],
        chosen_status=status,
        chosen_reason=reason,
        tried=tried,
        sample=sample or json.dumps({"body": {"type": "example"}, "headers": {}}, indent=2),
    )


@router.post(PAGE, dependencies=[Depends(protect_form)])
async def create_source(
    request: Request, source: str = Form(""), weir: Platform = Depends(platform)
) -> Response:
    try:
        saved = await manage.create(weir, _parsed(source))
    except (SourceError, manage.Conflict) as exc:
        return back(PAGE, problem=f"Webhook source not created: {exc}")
    url = f"{PAGE}/{saved.source.name}"
    return back(url, flash=f"Created: give the provider the URL ending /webhooks/{saved.id}.")


@router.post(PAGE + "/{name}/edit", dependencies=[Depends(protect_form)])
async def edit_source(
    request: Request,
    name: str,
    source: str = Form(""),
    revision: str = Form(""),
    weir: Platform = Depends(platform),
) -> Response:
    try:
        number = int(revision) if revision.strip().isdigit() else revision
        saved = await manage.update(weir, name, _parsed(source), number)
    except (SourceError, manage.Conflict, manage.NotFound) as exc:
        return back(f"{PAGE}/{name}", problem=f"Webhook source not changed: {exc}")
    return back(f"{PAGE}/{saved.source.name}", flash=f"Saved: revision {saved.revision}.")


@router.post(PAGE + "/{name}/test", dependencies=[Depends(protect_form)])
async def try_sample(
    request: Request, name: str, sample: str = Form(""), weir: Platform = Depends(platform)
) -> Response:
    saved = await _source(weir, name)
    try:
        tried = await manage.preview(weir, saved.source, manage.sample_of(_parsed(sample)))
    except SourceError as exc:
        tried = {"event": None, "reason": "invalid_sample", "error": str(exc)}
    shown = json.dumps(tried.get("event"), indent=2, ensure_ascii=False)
    return await _render(request, weir, name, tried=tried | {"shown": shown}, sample=sample)


@router.post(PAGE + "/{name}/deliveries/{delivery_id}/replay", dependencies=[Depends(protect_form)])
async def replay_delivery(
    request: Request, name: str, delivery_id: str, weir: Platform = Depends(platform)
) -> Response:
    saved = await _source(weir, name)
    try:
        answer = await receive.replay(weir, saved.id, delivery_id)
    except receive.ReplayRefused as exc:
        return back(f"{PAGE}/{name}", problem=f"Not replayed: {exc}")
    if answer.status != 200:
        return back(f"{PAGE}/{name}", problem=f"Not replayed: {answer.body.get('error')}")
    event_id = answer.body["ids"][0]
    return back(f"{PAGE}/{name}", flash=f"Replayed: event {event_id}.")


def _parsed(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise SourceError([f"the text is not valid JSON ({exc})"]) from None
