"""Mounting the endpoint: on a FastAPI app, or as a stand-alone ASGI app."""

from __future__ import annotations

from collections.abc import Sequence

from fastapi import FastAPI
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send
from weir.sdk._client import Weir
from weir.sdk._declaring.function import Function
from weir.sdk._serving.endpoint import Endpoint
from weir.sdk._serving.http import HttpRequest, HttpResponse

DEFAULT_PATH = "/api/inngest"


def serve(
    app: FastAPI,
    client: Weir,
    functions: Sequence[Function] | None = None,
    *,
    path: str = DEFAULT_PATH,
    serve_origin: str | None = None,
    serve_path: str | None = None,
) -> None:
    """Serve `client`'s functions (or `functions`) at `path` on an existing FastAPI app.

    Raises InvalidFunctionsError listing every problem of every function.
    """
    endpoint = client.endpoint(
        functions, framework="fast_api", serve_origin=serve_origin, serve_path=serve_path
    )

    # A plain ASGI route: FastAPI's own routes solve dependencies and wrap the handler for
    # each request, which cost the app about a third of its time per call.
    methods = ["GET", "PUT", "POST"]
    route = Route(path, _AsgiEndpoint(endpoint), methods=methods, include_in_schema=False)
    app.router.routes.append(route)


def asgi_app(
    client: Weir,
    functions: Sequence[Function] | None = None,
    *,
    serve_origin: str | None = None,
    serve_path: str | None = None,
) -> ASGIApp:
    """A plain ASGI app answering the protocol on every path it is mounted at."""
    endpoint = client.endpoint(
        functions, framework="asgi", serve_origin=serve_origin, serve_path=serve_path
    )
    return _AsgiEndpoint(endpoint)


class _AsgiEndpoint:
    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        request = await _from_starlette(Request(scope, receive))
        response = _to_starlette(await self.endpoint.handle(request))
        await response(scope, receive, send)


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


async def _from_starlette(request: Request) -> HttpRequest:
    headers = {k.lower(): v for k, v in request.headers.items()}
    return HttpRequest(request.method, str(request.url), headers, await request.body())


def _to_starlette(response: HttpResponse) -> Response:
    return Response(response.body, status_code=response.status, headers=response.headers)
