"""Failures to reach an app, or answers that did not come from an SDK, as plain sentences.

A user whose app is not running, or is mounted at another path, should read that, not
`ClientConnectorError: Cannot connect to host ...` or the HTML of a 404 page. Callers keep
the client exception as the cause; only the sentence is stored, logged and shown.
"""

import socket
from urllib.parse import urlsplit

import aiohttp
from weir.platform.executor.http.lean import ConnectFailed
from weir.platform.executor.response import AttemptFailed, RawResponse, failed

NOT_SDK_HINT = "is the URL the SDK's serve path (by default /api/inngest)?"
MAX_TEXT = 200  # of a plain-text answer worth quoting (a proxy's "Bad Gateway", say)


def url_problem(url: str) -> str | None:
    """What is wrong with an app URL Weir cannot call at all (no scheme, another scheme, no
    host), or None."""
    if "://" not in url:
        return f"{url!r} has no scheme: write it as http://{url.lstrip('/')} (or https://)"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018  # raises on a port that is not a number
    except ValueError as exc:
        return f"{url!r} is not a valid URL ({exc})"
    if parts.scheme.lower() not in ("http", "https"):
        return f"{url!r} is not an http:// or https:// URL: Weir calls apps over HTTP"
    if not parts.hostname:
        return f"{url!r} names no host: write it as http://HOST:PORT/api/inngest"
    return None


def unreachable(url: str, exc: BaseException) -> str:
    """Why a request to the app at `url` got no (whole) answer."""
    url = _serve_url(url)
    cause = exc.__cause__ or exc
    if isinstance(cause, TimeoutError):
        return f"Timeout waiting for the app at {url} (--app-timeout); is it stuck or overloaded?"
    if isinstance(cause, aiohttp.ClientConnectorDNSError) or _dns_failure(cause):
        return f"the host of {url} could not be found; is the name right?"
    if isinstance(cause, aiohttp.ClientConnectorError | ConnectFailed):
        return f"no app answered at {url}; is it running?"
    if isinstance(cause, aiohttp.InvalidURL | ValueError):
        return f"{url} is not a URL Weir can call"
    if cause is exc and not isinstance(exc, aiohttp.ClientError | OSError):
        return str(exc)  # already a sentence of ours (a response over the size limit)
    return f"the app at {url} closed the connection before answering; did it crash?"


def non_sdk_failure(url: str, raw: RawResponse) -> AttemptFailed | None:
    """A failed call answered by something other than the SDK, as a failed attempt (retried:
    a proxy's 502 may pass); None for SDK answers. 200/206 without the headers and 401 are
    judged with the rest of the answer (response.classify)."""
    if raw.status in (200, 201, 206, 401) or "x-inngest-sdk" in raw.headers:
        return None
    kind = raw.headers.get("content-type", "")
    return failed(
        "NotAnSdkResponse", not_an_sdk(url, raw.status, kind, raw.body), status=raw.status
    )


def not_an_sdk(url: str, status: int, content_type: str, body: bytes) -> str:
    """An answer without the SDK's headers: a web server or proxy answered, not the SDK."""
    url = _serve_url(url)
    if status == 404:
        return f"{url} answered HTTP 404 (nothing there); {NOT_SDK_HINT}"
    said = _plain_text(content_type, body)
    quoted = f' ("{said}")' if said else ""
    return f"{url} answered HTTP {status}{quoted}, but not as an SDK; {NOT_SDK_HINT}"


def _plain_text(content_type: str, body: bytes) -> str:
    """A short text/plain answer is worth quoting; HTML and JSON pages are not."""
    if not content_type.lower().startswith("text/plain"):
        return ""
    text = " ".join(body[: MAX_TEXT + 1].decode("utf-8", "replace").split())
    return text if 0 < len(text) <= MAX_TEXT else ""


def _serve_url(url: str) -> str:
    """The URL as the user gave it: a function's registered URL adds ?fnId=...&stepId=..."""
    return url.split("?", 1)[0]


def _dns_failure(exc: BaseException) -> bool:
    os_error = getattr(exc, "os_error", None)
    return isinstance(os_error, socket.gaierror)
