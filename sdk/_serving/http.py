"""Framework-neutral request and response, so one endpoint serves FastAPI and plain ASGI."""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit, urlunsplit


@dataclass(frozen=True)
class HttpRequest:
    method: str
    url: str  # as the app saw it, query included
    headers: Mapping[str, str]  # lower-case names
    body: bytes = b""

    def query(self, name: str) -> str | None:
        values = _query_of(self.url).get(name)
        return values[0] if values else None

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())

    def url_without_query(self) -> str:
        parts = urlsplit(self.url)
        return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


@functools.lru_cache(maxsize=64)  # a call asks for several names of the same URL
def _query_of(url: str) -> dict[str, list[str]]:
    return parse_qs(urlsplit(url).query)


@dataclass
class HttpResponse:
    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)


def json_bytes(value: Any) -> bytes:
    return json.dumps(value).encode()


def json_response(
    status: int, value: Any, headers: Mapping[str, str] | None = None
) -> HttpResponse:
    return HttpResponse(
        status, json_bytes(value), {"content-type": "application/json", **(headers or {})}
    )


def unauthorized() -> HttpResponse:
    # 401s carry no SDK identity headers: the caller is not trusted with them (§12.1).
    headers = {"content-type": "application/json", "x-inngest-sdk-handled": "true"}
    return HttpResponse(401, json_bytes({"message": "Unauthorized"}), headers)


def unreadable(message: str) -> HttpResponse:
    """A body whose signature cannot be checked at all (it has no canonical JSON form): 400
    with the cause, without the SDK identity headers a 401 also leaves out."""
    headers = {"content-type": "application/json", "x-inngest-sdk-handled": "true"}
    body = {"name": "UnreadableBody", "message": message}
    return HttpResponse(400, json_bytes(body), headers)
