"""Connect (docs/protocol.md §13): the session start, the workers' WebSocket, reply flushes.

Start mode guards `/v0/connect/start` and `/v0/connect/flush` like the SDK's other calls
(the signing key as Bearer, security/auth.py); the socket itself is admitted by the one-time
session token the start handed out, in the gateway URL's query: an upgrade without a valid one
is answered 401 and no frame of it is ever read (frames are capped at wire.MAX_FRAME_BYTES by
the server, cli/server.py). The worker names the same session in its first message.
"""

import contextlib
import logging

from fastapi import APIRouter, Depends, Request, WebSocket
from fastapi.responses import JSONResponse, Response
from starlette.websockets import WebSocketDisconnect
from weir.platform.api.deps import platform
from weir.platform.connect import binding, wire
from weir.platform.connect.gateway import PROTOCOL, SESSION_PARAM, SocketClosed
from weir.platform.executor.response import MAX_RESPONSE_BYTES
from weir.platform.security.bodies import BodyTooLarge, read_capped
from weir.platform.service import Platform

router = APIRouter()
GATEWAY_PATH = "/v0/connect/gateway"
MAX_START_BYTES = 64 * 1024  # a list of gateways to avoid
PROTOBUF = "application/protobuf"
CONNECT_OFF = (
    "Connect is off: weir start admits Connect workers only for the apps named in "
    f"{binding.FLAG} (WEIR_CONNECT_APPS), and it names none"
)
log = logging.getLogger("weir.connect")


@router.post("/v0/connect/start", include_in_schema=False)
async def start(request: Request, weir: Platform = Depends(platform)) -> Response:
    if weir.connect_apps.off:  # refused before a session: the SDK gives up at a 403
        log.warning("refused a Connect worker: %s", CONNECT_OFF)
        return JSONResponse({"error": CONNECT_OFF}, 403)
    try:
        wire.check_start_request(await read_capped(request, MAX_START_BYTES, "start request"))
    except BodyTooLarge as exc:
        return JSONResponse({"error": str(exc)}, 413)
    except wire.WireError as exc:
        return JSONResponse({"error": f"the start request is not a StartRequest: {exc}"}, 400)
    scheme = "wss" if request.url.scheme == "https" else "ws"
    endpoint = str(request.url.replace(scheme=scheme, path=GATEWAY_PATH, query=""))
    return Response(weir.gateway.start_session(endpoint).encode(), media_type=PROTOBUF)


@router.post("/v0/connect/flush", include_in_schema=False)
async def flush(request: Request, weir: Platform = Depends(platform)) -> Response:
    """A reply the worker could not get acknowledged over its socket, sent again over HTTP."""
    try:
        reply = wire.Reply.decode(await read_capped(request, MAX_RESPONSE_BYTES, "reply"))
    except BodyTooLarge as exc:
        return JSONResponse({"error": str(exc)}, 413)
    except wire.WireError as exc:
        return JSONResponse({"error": f"the flushed reply is not an SDKResponse: {exc}"}, 400)
    weir.gateway.take_reply(reply)  # a reply no call waits for any more is dropped
    return Response(b"", media_type=PROTOBUF)


@router.websocket(GATEWAY_PATH)
async def gateway(websocket: WebSocket) -> None:
    weir: Platform = websocket.app.state.platform
    claimed = weir.gateway.claim(websocket.query_params.get(SESSION_PARAM, ""))
    if claimed is None:
        error = (
            "unknown, used or expired Connect session: call /v0/connect/start first and open "
            "the gateway_endpoint it returns, query included, within 60 s"
        )
        await websocket.send_denial_response(JSONResponse({"error": error}, 401))
        return
    offered = websocket.scope.get("subprotocols") or []
    await websocket.accept(subprotocol=PROTOCOL if PROTOCOL in offered else None)
    await weir.gateway.serve(_Socket(websocket), claimed)


class _Socket:
    """Starlette's WebSocket as the gateway's Socket: binary frames, one closed error."""

    def __init__(self, websocket: WebSocket) -> None:
        self.websocket = websocket

    async def send(self, data: bytes) -> None:
        try:
            await self.websocket.send_bytes(data)
        except (WebSocketDisconnect, RuntimeError, OSError) as exc:
            raise SocketClosed(str(exc)) from exc

    async def receive(self) -> bytes:
        while True:
            try:
                message = await self.websocket.receive()
            except (RuntimeError, OSError) as exc:
                raise SocketClosed(str(exc)) from exc
            if message["type"] == "websocket.disconnect":
                raise SocketClosed("the worker closed the socket")
            data = message.get("bytes")
            if data is not None:
                return bytes(data)
            # a text frame: the protocol is binary, so it is skipped

    async def close(self, code: int, reason: str) -> None:
        with contextlib.suppress(RuntimeError, OSError):
            await self.websocket.close(code, reason)
