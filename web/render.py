"""Jinja2 set-up and the one helper every page uses to answer with HTML."""

from pathlib import Path
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse
from jinja2 import Environment, FileSystemLoader, select_autoescape
from weir.web.session import csrf_for

HERE = Path(__file__).parent
TEMPLATES = Environment(
    loader=FileSystemLoader(HERE / "templates"),
    autoescape=select_autoescape(["html"]),  # every payload shown is user data
    trim_blocks=True,
    lstrip_blocks=True,
)
NAV = (
    ("runs", "/runs", "Runs"),
    ("events", "/events", "Events"),
    ("functions", "/functions", "Functions"),
    ("apps", "/apps", "Apps"),
    ("webhooks", "/webhook-sources", "Webhooks"),
)


def page(request: Request, template: str, status: int = 200, **context: Any) -> HTMLResponse:
    html = TEMPLATES.get_template(template).render(
        nav=NAV,
        path=request.url.path,
        flash=request.query_params.get("flash"),
        problem=request.query_params.get("problem"),
        csrf=csrf_for(request),
        logged_in=bool(csrf_for(request)),
        **context,
    )
    return HTMLResponse(html, status)
