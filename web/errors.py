"""Friendly error pages: people see what went wrong and where to go, never a stack trace.

API paths keep FastAPI's JSON errors; only UI pages get HTML.
"""

import logging

from fastapi import FastAPI, Request
from fastapi.exception_handlers import http_exception_handler
from fastapi.responses import JSONResponse, Response
from sqlalchemy.exc import SQLAlchemyError
from starlette.exceptions import HTTPException
from weir.web.render import page

log = logging.getLogger("weir.web")
API_PREFIXES = ("/e/", "/fn/", "/v0/", "/v1/", "/health", "/ui/api/", "/metrics")


class NotFound(Exception):
    """A page names something that does not exist (an unknown run id, ...)."""

    def __init__(self, title: str, message: str) -> None:
        super().__init__(message)
        self.title, self.message = title, message


def install(app: FastAPI) -> None:
    app.add_exception_handler(NotFound, _not_found)  # type: ignore[arg-type]
    app.add_exception_handler(SQLAlchemyError, _store_down)  # type: ignore[arg-type]
    app.add_exception_handler(HTTPException, _http_error)  # type: ignore[arg-type]


async def _not_found(request: Request, exc: NotFound) -> Response:
    return page(request, "error.html", 404, title=exc.title, message=exc.message)


async def _store_down(request: Request, exc: SQLAlchemyError) -> Response:
    if request.url.path.startswith(API_PREFIXES):
        raise exc  # the API keeps its own behaviour: a plain 500
    log.error("store error on %s: %s", request.url.path, exc)
    message = (
        "Weir could not read its database just now. The server keeps running; "
        "try again in a moment, and check the server log if this persists."
    )
    return page(request, "error.html", 503, title="The store is unavailable", message=message)


async def _http_error(request: Request, exc: HTTPException) -> Response:
    if request.url.path.startswith(API_PREFIXES):
        if exc.status_code == 404 and exc.detail == "Not Found":  # no route matched at all
            error = f"there is no {request.method} {request.url.path}; see /docs for the API"
            return JSONResponse({"error": error}, status_code=404)
        return await http_exception_handler(request, exc)
    if exc.status_code == 404:
        message = f"There is no page at {request.url.path}."
        return page(request, "error.html", 404, title="Page not found", message=message)
    response = page(
        request,
        "error.html",
        exc.status_code,
        title="Something went wrong",
        message=str(exc.detail),
    )
    response.headers.update(exc.headers or {})  # e.g. a 405's Allow
    return response
