"""Out-of-band sync: POST this app's function configs to `<api origin>/fn/register` (§4)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import httpx
from weir.sdk._declaring.config import Settings
from weir.sdk._declaring.function import Compiled
from weir.sdk._identity import SDK_REGISTER, outgoing_headers
from weir.sdk._serving.signing import hashed_key

CAPABILITIES = {"trust_probe": "v1"}


def register_payload(
    app_id: str, app_version: str | None, framework: str, fns: Sequence[Compiled], app_url: str
) -> dict[str, Any]:
    body = {
        "appname": app_id,
        "appVersion": app_version,
        "capabilities": CAPABILITIES,
        "deploy_type": "ping",
        "framework": framework,
        "functions": [fn.registered(app_url) for fn in fns],
        "sdk": SDK_REGISTER,
        "url": app_url,
        "v": "0.1",
    }
    stripped: dict[str, Any] = _without_nulls(body)
    return stripped


def _without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


async def post_register(
    settings: Settings,
    payload: dict[str, Any],
    *,
    framework: str,
    server_kind: str | None,
    deploy_id: str | None,
    transport: httpx.MockTransport | None = None,
) -> httpx.Response:
    """POST the payload; on 401/403 try once more with the fallback key (§12.3)."""
    url = f"{settings.api_origin}/fn/register"
    params = {"deployId": deploy_id} if deploy_id else None
    headers = {**outgoing_headers(settings), "x-inngest-framework": framework}
    if server_kind:
        headers["x-inngest-expected-server-kind"] = server_kind
    keys: list[str | None] = [*settings.signing_keys] or [None]
    async with httpx.AsyncClient(transport=transport, timeout=30) as http:
        for key in keys:
            auth = {"authorization": f"Bearer {hashed_key(key)}"} if key else {}
            reply = await http.post(url, json=payload, params=params, headers={**headers, **auth})
            if reply.status_code not in (401, 403):
                break
    return reply
