"""Posting events to the Event API (§6), with retries on server and network errors."""

from __future__ import annotations

import asyncio
import base64
import os
import random
import time
from collections.abc import Sequence
from typing import Any

import httpx
from weir.sdk._declaring.config import Settings
from weir.sdk._errors import SendEventsError
from weir.sdk._event import Event
from weir.sdk._identity import outgoing_headers

ATTEMPTS = 5
_NO_KEY = "NO_EVENT_KEY_SET"


class EventSender:
    def __init__(self, settings: Settings, transport: httpx.MockTransport | None = None) -> None:
        self._settings = settings
        self._transport = transport

    async def send(self, events: Sequence[Event]) -> list[str]:
        url, body, headers = self._request(events)
        async with httpx.AsyncClient(transport=self._transport) as http:
            for attempt in range(ATTEMPTS):
                reply = await _attempt_async(http, url, body, headers)
                if reply is not None or attempt == ATTEMPTS - 1:
                    return _ids(reply)
                await asyncio.sleep(_backoff(attempt))
        raise AssertionError("unreachable")

    def send_sync(self, events: Sequence[Event]) -> list[str]:
        url, body, headers = self._request(events)
        with httpx.Client(transport=self._transport) as http:
            for attempt in range(ATTEMPTS):
                reply = _attempt_sync(http, url, body, headers)
                if reply is not None or attempt == ATTEMPTS - 1:
                    return _ids(reply)
                time.sleep(_backoff(attempt))
        raise AssertionError("unreachable")

    def _request(self, events: Sequence[Event]) -> tuple[str, list[dict[str, Any]], dict[str, str]]:
        key = self._settings.event_key
        if not key and not self._settings.dev:
            raise SendEventsError("no event key: set event_key= or WEIR_EVENT_KEY to send")
        url = f"{self._settings.event_api_origin}/e/{key or _NO_KEY}"
        headers = {**outgoing_headers(self._settings), "x-inngest-event-id-seed": _seed()}
        return url, [_stamped(e) for e in events], headers


def _stamped(event: Event) -> dict[str, Any]:
    wire = event.to_wire()
    if not wire["ts"]:
        wire["ts"] = int(time.time() * 1000)
    return wire


def _seed() -> str:
    # Lets the server derive stable ids per event index when a send is retried.
    entropy = base64.b64encode(os.urandom(10)).decode()
    return f"{int(time.time() * 1000)},{entropy}"


def _backoff(attempt: int) -> float:
    return float(0.1 * 2**attempt) + random.uniform(0, 0.05)


Reply = httpx.Response | None


async def _attempt_async(http: httpx.AsyncClient, url: str, body: Any, headers: Any) -> Reply:
    try:
        reply = await http.post(url, json=body, headers=headers)
    except httpx.TransportError:
        return None
    return None if reply.status_code >= 500 else reply


def _attempt_sync(http: httpx.Client, url: str, body: Any, headers: Any) -> Reply:
    try:
        reply = http.post(url, json=body, headers=headers)
    except httpx.TransportError:
        return None
    return None if reply.status_code >= 500 else reply


def _ids(reply: Reply) -> list[str]:
    if reply is None:
        raise SendEventsError(f"the Event API did not accept the events after {ATTEMPTS} attempts")
    try:
        body = reply.json()
    except ValueError:
        body = None
    if not isinstance(body, dict):
        raise SendEventsError(f"the Event API answered HTTP {reply.status_code} without JSON")
    ids = [i for i in body.get("ids") or [] if isinstance(i, str)]
    if body.get("error") or reply.status_code >= 400:
        raise SendEventsError(str(body.get("error") or f"HTTP {reply.status_code}"), ids)
    return ids
