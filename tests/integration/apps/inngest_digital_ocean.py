"""Official-SDK functions served by `inngest.digital_ocean`, behind a small ASGI stand-in for
DigitalOcean's web-function runtime ("web: raw"): each HTTP request becomes the `event` dict
with an `http` object, as DigitalOcean passes it, and the returned dict becomes the response."""

import json
from dataclasses import dataclass
from typing import Any

import inngest.digital_ocean

from tests.integration.apps.inngest_sync_functions import FUNCTIONS, client

# DigitalOcean serves a function at /api/v1/web/<namespace>/<package>/<function>.
FUNCTION_NAME = "/fn-weir/inngest/serve"
SERVE_PATH = "/api/v1/web" + FUNCTION_NAME

handle = inngest.digital_ocean.serve(client, FUNCTIONS)


@dataclass
class Context:
    api_host: str
    function_name: str = FUNCTION_NAME


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    body = await _body(receive)
    if scope["path"] != SERVE_PATH:
        await _reply(send, 404, {}, b"not found")
        return
    host = dict(scope["headers"]).get(b"host", b"").decode()
    event = {"http": _http(scope, body)}
    out = handle(event, Context(api_host=f"http://{host}"))
    payload = out["body"] if isinstance(out["body"], str) else json.dumps(out["body"])
    await _reply(send, out["statusCode"], out["headers"], payload.encode())


def _http(scope: dict[str, Any], body: bytes) -> dict[str, Any]:
    return {
        "body": body.decode() if body else None,
        "headers": {k.decode().lower(): v.decode() for k, v in scope["headers"]},
        "method": scope["method"],
        "path": "",
        "queryString": scope["query_string"].decode(),
    }


async def _body(receive: Any) -> bytes:
    chunks, more = [], True
    while more:
        message = await receive()
        chunks.append(message.get("body", b""))
        more = message.get("more_body", False)
    return b"".join(chunks)


async def _reply(send: Any, status: int, headers: dict[str, str], body: bytes) -> None:
    raw = [(k.lower().encode(), v.encode()) for k, v in headers.items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})
