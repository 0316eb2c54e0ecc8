"""The serve endpoint: GET introspection, PUT sync, POST invocations and trust probes."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
from pydantic import ValidationError
from weir.sdk._declaring.config import Settings
from weir.sdk._declaring.function import Compiled
from weir.sdk._errors import CodedError
from weir.sdk._identity import REQ_VERSION, SDK_HEADER, VERSION, outgoing_headers
from weir.sdk._sender import EventSender
from weir.sdk._serving.handler import failure, invoke
from weir.sdk._serving.http import (
    HttpRequest,
    HttpResponse,
    json_response,
    unauthorized,
    unreadable,
)
from weir.sdk._serving.register import CAPABILITIES, post_register, register_payload
from weir.sdk._serving.request import EventsMissingError, InvocationRequest, parse_invocation
from weir.sdk._serving.signing import (
    BOUND_HEADER,
    UnreadableBody,
    bound_signature,
    hashed_key,
    request_mac,
    signature,
    verify,
)

SCHEMA_VERSION = "2024-05-24"


@dataclass(frozen=True)
class AppSpec:
    """What one served app is: its id, functions and where it is reachable."""

    app_id: str
    app_version: str | None
    functions: Sequence[Compiled]
    framework: str
    serve_origin: str | None = None
    serve_path: str | None = None


class Endpoint:
    def __init__(
        self,
        app: AppSpec,
        settings: Settings,
        sender: EventSender,
        transport: httpx.MockTransport | None = None,
    ) -> None:
        self.app = app
        self.settings = settings
        self.sender = sender
        self.transport = transport
        self.by_slug = {fn.slug: fn for fn in app.functions}

    async def handle(self, request: HttpRequest) -> HttpResponse:
        handlers = {"GET": self._introspect, "PUT": self._sync, "POST": self._post}
        handler = handlers.get(request.method.upper())
        if handler is None:
            return json_response(405, {"message": f"method {request.method} not allowed"})
        try:
            return await handler(request)
        except UnreadableBody as exc:  # no signature could be checked: say why, not 401
            return unreadable(str(exc))

    # -- shared ---------------------------------------------------------------------------

    def _headers(self) -> dict[str, str]:
        headers = {
            "content-type": "application/json",
            "x-inngest-sdk": SDK_HEADER,
            "user-agent": SDK_HEADER,
            "x-inngest-req-version": REQ_VERSION,
            "x-inngest-framework": self.app.framework,
            "x-inngest-expected-server-kind": self.settings.mode,
            "x-inngest-sdk-handled": "true",
        }
        if self.settings.env:
            headers["x-inngest-env"] = self.settings.env
        return headers

    def _finish(
        self, response: HttpResponse, key: str | None = None, request: HttpRequest | None = None
    ) -> HttpResponse:
        """Add the SDK headers, and sign with the key that verified the request: the body, as
        every SDK does, and (X-Weir-Signature) the body bound to the request's signature."""
        response.headers = {**self._headers(), **response.headers}
        if key is not None:
            response.headers["x-inngest-signature"] = signature(response.body, key)
            request_s = request_mac(request.header("x-inngest-signature")) if request else None
            if request_s:
                bound = bound_signature(response.body, key, request_s)
                response.headers[BOUND_HEADER] = bound
        return response

    def _verified_key(self, request: HttpRequest) -> tuple[bool, str | None]:
        """(trusted, signing key used). Dev mode trusts everyone and verifies nothing."""
        if self.settings.dev:
            return True, None
        header = request.header("x-inngest-signature")
        key = verify(header, request.body, self.settings.signing_keys)
        return key is not None, key

    def _kind_mismatch(self, request: HttpRequest) -> bool:
        kind = request.header("x-inngest-server-kind")
        return kind is not None and kind != self.settings.mode

    # -- GET ------------------------------------------------------------------------------

    async def _introspect(self, request: HttpRequest) -> HttpResponse:
        if self._kind_mismatch(request) and self.settings.dev:
            return self._finish(json_response(403, {}))
        trusted, key = self._verified_key(request)
        if not trusted:
            return unauthorized()
        body = self._inspection() if key is None else self._authenticated_inspection()
        return self._finish(json_response(200, body), key, request)

    def _inspection(self) -> dict[str, Any]:
        s = self.settings
        return {
            "schema_version": SCHEMA_VERSION,
            "function_count": len(self.app.functions),
            "has_event_key": s.event_key is not None,
            "has_signing_key": s.signing_key is not None,
            "has_signing_key_fallback": s.signing_key_fallback is not None,
            "mode": s.mode,
        }

    def _authenticated_inspection(self) -> dict[str, Any]:
        s = self.settings
        return {
            **self._inspection(),
            "api_origin": s.api_origin,
            "app_id": self.app.app_id,
            "authentication_succeeded": True,
            "capabilities": CAPABILITIES,
            "env": s.env,
            "event_api_origin": s.event_api_origin,
            "event_key_hash": _sha256_text(s.event_key),
            "framework": self.app.framework,
            "sdk_language": "py",
            "sdk_version": VERSION,
            "serve_origin": self.app.serve_origin or s.serve_origin,
            "serve_path": self.app.serve_path or s.serve_path,
            "signing_key_hash": _hashed_or_none(s.signing_key),
            "signing_key_fallback_hash": _hashed_or_none(s.signing_key_fallback),
        }

    # -- PUT ------------------------------------------------------------------------------

    async def _sync(self, request: HttpRequest) -> HttpResponse:
        if self._kind_mismatch(request):
            message = f"this app runs in {self.settings.mode} mode"
            body = {"code": "server_kind_mismatch", "message": message}
            return self._finish(json_response(400, body))
        payload = register_payload(
            self.app.app_id,
            self.app.app_version,
            self.app.framework,
            self.app.functions,
            self.app_url(request),
        )
        try:
            reply = await post_register(
                self.settings,
                payload,
                framework=self.app.framework,
                server_kind=request.header("x-inngest-server-kind"),
                deploy_id=request.query("deployId"),
                transport=self.transport,
            )
            body = reply.json()
        except (httpx.HTTPError, ValueError) as err:
            return self._finish(_registration_failed(str(err)))
        if not isinstance(body, dict):
            return self._finish(_registration_failed("the register reply is not a JSON object"))
        # 200 even when the server refused: its error object is passed through (§4.1).
        return self._finish(json_response(200, body, {"x-inngest-sync-kind": "out_of_band"}))

    def app_url(self, request: HttpRequest) -> str:
        """The URL this PUT reached, unless a serve origin/path override says otherwise."""
        seen = urlsplit(request.url_without_query())
        origin = self.app.serve_origin or self.settings.serve_origin
        path = self.app.serve_path or self.settings.serve_path or seen.path
        if origin:
            forced = urlsplit(origin if "://" in origin else f"http://{origin}")
            return urlunsplit((forced.scheme, forced.netloc, path, "", ""))
        return urlunsplit((seen.scheme, seen.netloc, path, "", ""))

    # -- POST -----------------------------------------------------------------------------

    async def _post(self, request: HttpRequest) -> HttpResponse:
        trusted, key = self._verified_key(request)
        if not trusted:
            return unauthorized()
        probe = request.query("probe")
        if probe is not None:
            return self._finish(self._probe(probe), key, request)
        return self._finish(await self._invoke(request), key, request)

    def _probe(self, probe: str) -> HttpResponse:
        if probe == "trust":
            return json_response(200, None)
        message = f"unknown probe {probe!r}"
        return json_response(500, {"code": "unknown", "message": message, "name": "ProbeError"})

    async def _invoke(self, request: HttpRequest) -> HttpResponse:
        try:
            parsed = parse_invocation(request.body)
            fn = self._function(request.query("fnId"))
            if parsed.use_api:
                parsed = await self._load_from_api(parsed)
        except (ValidationError, EventsMissingError, CodedError, httpx.HTTPError) as err:
            return failure(err)
        step_id = request.query("stepId")
        target = None if step_id in (None, "", "step") else step_id
        return await invoke(fn, parsed, target=target, sender=self.sender, headers=request.headers)

    def _function(self, slug: str | None) -> Compiled:
        fn = self.by_slug.get(slug or "")
        if fn is None:
            message = f"function {slug} not found"
            raise CodedError("function_not_found", "FunctionNotFoundError", message)
        return fn

    async def _load_from_api(self, parsed: InvocationRequest) -> InvocationRequest:
        """Large runs: the server asks us to fetch events and memos from its API (§7.3)."""
        base = f"{self.settings.api_origin}/v0/runs/{parsed.ctx.run_id}"
        headers = outgoing_headers(self.settings)
        if self.settings.signing_key:
            headers["authorization"] = f"Bearer {hashed_key(self.settings.signing_key)}"
        async with httpx.AsyncClient(transport=self.transport, timeout=30) as http:
            batch = (await http.get(f"{base}/batch", headers=headers)).raise_for_status()
            actions = (await http.get(f"{base}/actions", headers=headers)).raise_for_status()
        update = {"events": batch.json(), "steps": actions.json()}
        return InvocationRequest.model_validate({**parsed.model_dump(), **update})


def _registration_failed(message: str) -> HttpResponse:
    body = {"code": "registration_failed", "message": message, "name": "RegistrationFailed"}
    return json_response(500, body)


def _sha256_text(text: str | None) -> str | None:
    return None if text is None else hashlib.sha256(text.encode()).hexdigest()


def _hashed_or_none(key: str | None) -> str | None:
    return None if key is None else hashed_key(key)
