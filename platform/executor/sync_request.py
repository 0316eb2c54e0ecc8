"""Asking an app to sync: PUT its serve URL; the SDK then posts its config to /fn/register."""

import json
from collections.abc import Awaitable, Callable, Iterator

from weir.platform.executor import app_errors, app_hosts, signing
from weir.platform.executor.http.client import AppClient, Redirected, TransportError
from weir.platform.functions import is_connect_url
from weir.platform.settings import Settings

# Given the app id a sync's answer names (None if it names none), whether the app registered
# with this Weir (its store) during the sync.
RegisteredHere = Callable[[str | None], Awaitable[bool]]


async def request_sync(
    client: AppClient, url: str, settings: Settings, registered_here: RegisteredHere | None = None
) -> str | None:
    """Ask the app at `url` to sync: None when it did, else what went wrong. With
    `registered_here`, an app that answers the request but registers with another server
    (its SDK pointed at another Weir or Inngest) is a failure saying so."""
    if is_connect_url(url):  # nothing listens there: the worker dials Weir (protocol.md §13)
        return (
            f"{url} is a Connect app: it syncs each time its worker connects, so restart the "
            "worker (inngest.connect) to sync it again"
        )
    refused = refusal(url, settings)
    if refused:
        return refused  # never even contacted
    body = json.dumps({"url": url}, separators=(",", ":")).encode()
    headers = {
        "content-type": "application/json",
        "x-inngest-server-kind": "dev" if settings.dev else "cloud",
    }
    if settings.signing_key:
        headers["x-inngest-signature"] = signing.sign(body, settings.signing_key, _seconds())
    try:
        # the sync timeout, not the app's: a sync waits only for the app to post its config
        raw = await client.request("PUT", url, body, headers, timeout_s=settings.sync_timeout_s)
    except Redirected as exc:
        return str(exc)
    except TransportError as exc:
        return app_errors.unreachable(url, exc)
    if raw.status >= 300 and "x-inngest-sdk" not in raw.headers:
        return app_errors.not_an_sdk(url, raw.status, raw.headers.get("content-type", ""), raw.body)
    error = _sync_error(raw.status, raw.body)
    if error is None and registered_here is not None:
        app_id = _app_id(raw.body)
        if not await registered_here(app_id):
            return _registered_elsewhere(url, app_id, settings)
    return error


def refusal(url: str, settings: Settings) -> str | None:
    """Why Weir does not ask `url` to sync at all (not a URL it can call, or a host it may
    not sync), or None."""
    return app_errors.url_problem(url) or app_hosts.url_problem(url, settings.allowed_app_hosts)


def _app_id(body: bytes) -> str | None:
    """The app id a sync's answer names: the SDKs pass the register reply through."""
    try:
        value = json.loads(body)
    except (ValueError, RecursionError):
        return None
    app_id = value.get("app_id") if isinstance(value, dict) else None
    return app_id if isinstance(app_id, str) and app_id else None


def _registered_elsewhere(url: str, app_id: str | None, settings: Settings) -> str:
    here = settings.local_url
    variable = "INNGEST_DEV" if settings.dev else "INNGEST_BASE_URL"
    named = f" (its answer names app {app_id!r}, which this Weir does not know)" if app_id else ""
    return (
        f"the app at {url} answered the sync request, but registered its functions with "
        f"another server{named}: its SDK is pointed elsewhere (by default "
        f"http://127.0.0.1:8288). Set {variable}={here} in the app's environment, restart "
        "it and sync again"
    )


def _sync_error(status: int, body: bytes) -> str | None:
    try:
        value = json.loads(body)
    except (ValueError, RecursionError):  # an app's answer may be nested past the parser
        value = None
    if status >= 300:
        return f"the app answered HTTP {status}: {body[:500].decode('utf-8', 'replace')}"
    if isinstance(value, dict) and value.get("error"):
        return str(value["error"])  # the SDK passes /fn/register's error through with a 200
    return None


def _seconds() -> int:
    import time

    return int(time.time())


def retry_delays(first_s: float = 0.5, cap_s: float = 30.0) -> Iterator[float]:
    """Seconds to wait before each new attempt at a sync: doubling from `first_s` up to
    `cap_s`, so an app that is not up yet is asked again soon, and an absent one rarely."""
    delay = first_s
    while True:
        yield delay
        delay = min(delay * 2, cap_s)
