"""The `AIGateway` op (step.ai.infer, docs/protocol.md §8.1): what its `opts` must hold, and the
request Weir makes from them.

`opts` is `{"url", "body", "headers", "auth_key", "format", "type": "step.ai.infer"}`, as the
official SDK sends it. The key goes where the format's provider expects it; headers the SDK sent
come first, so a caller can still add its own (e.g. `anthropic-version`). Header names are sent
as the app spelled them (some model proxies compare them case-sensitively, and Inngest sends
them as given); a header Weir sets replaces the app's of the same name in any case.

A key in the URL's user info (`https://user:key@host/...`) is sent as HTTP Basic and taken out
of the URL, so it is in no URL Weir shows, logs or keeps (`shown_url` drops it too).
"""

import base64
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from weir.platform.foundation import jsonvalues
from weir.platform.foundation.record_type import record

MAX_URL = 2048
MAX_HEADER = 8192  # one header's name plus value


class AIOptsError(ValueError):
    """The op's opts cannot be turned into a request."""


@record
class AIRequest:
    url: str
    body: dict[str, Any]
    headers: dict[str, str]  # the SDK's headers plus the auth header; secrets included
    format: str


def auth_headers(fmt: str, key: str) -> dict[str, str]:
    """The header that carries `key` for a provider format (none for an empty key)."""
    if not key:
        return {}
    fmt = fmt.lower()
    if fmt == "anthropic":
        return {"x-api-key": key}
    if fmt == "gemini":
        return {}  # the SDK's Gemini adapter puts the key in the URL (`?key=`)
    if fmt == "azure-openai":
        return {"api-key": key}
    return {"authorization": f"Bearer {key}"}  # openai and its look-alikes (grok, deepseek)


def parse_ai_opts(opts: Any, where: str = "op AIGateway") -> AIRequest:
    """The request an AIGateway op asks for; AIOptsError naming the field otherwise."""
    if not isinstance(opts, dict):
        raise AIOptsError(f"{where}: 'opts' must be an object with url, body, headers, format")
    url = opts.get("url")
    if not isinstance(url, str) or not url:
        raise AIOptsError(
            f"{where}: 'opts.url' must be the http(s) URL to POST to, got {url!r:.80}"
        )
    _check_url(url, where)
    body = opts.get("body")
    if not isinstance(body, dict):
        raise AIOptsError(
            f"{where}: 'opts.body' must be a JSON object (the request sent to the model), "
            f"got {type(body).__name__}"
        )
    fmt = opts.get("format") or "openai-chat"
    if not isinstance(fmt, str):
        raise AIOptsError(f"{where}: 'opts.format' must be a string such as 'openai-chat'")
    key = opts.get("auth_key") or ""
    if not isinstance(key, str):
        raise AIOptsError(f"{where}: 'opts.auth_key' must be a string")
    headers = _headers(opts.get("headers"), where)
    url, basic = _without_userinfo(url)
    if basic:
        _put(headers, "authorization", basic, replace=False)  # the app's own header wins
    for name, value in auth_headers(fmt, key).items():
        _put(headers, name, value)
    _put(headers, "content-type", "application/json")
    for name, value in headers.items():
        if len(name) + len(value) > MAX_HEADER or jsonvalues.control_char(name + value):
            raise AIOptsError(
                f"{where}: header {name!r:.40} must be printable and at most {MAX_HEADER} bytes"
            )
    return AIRequest(url, body, headers, fmt)


def _put(headers: dict[str, str], name: str, value: str, *, replace: bool = True) -> None:
    """Set a header, keeping the app's spelling of its name if it sent one."""
    same = [k for k in headers if k.lower() == name]
    if same and not replace:
        return
    for k in same[1:]:
        del headers[k]
    headers[same[0] if same else name] = value


def _without_userinfo(url: str) -> tuple[str, str]:
    """The URL without user info, and the Basic `authorization` value that carried it."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url, ""
    userinfo, _, hostport = parts.netloc.rpartition("@")
    user, _, password = userinfo.partition(":")
    pair = f"{unquote(user)}:{unquote(password)}".encode()
    bare = urlunsplit((parts.scheme, hostport, parts.path, parts.query, parts.fragment))
    return bare, "Basic " + base64.b64encode(pair).decode()


def _check_url(url: str, where: str) -> None:
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 — raises ValueError on a bad port
    except ValueError:
        raise AIOptsError(
            f"{where}: 'opts.url' {shown_url(url)!r:.80} is not a valid URL"
        ) from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise AIOptsError(
            f"{where}: 'opts.url' {shown_url(url)!r:.80} must be an http(s) URL with a host"
        )
    if len(url) > MAX_URL or jsonvalues.control_char(url):
        raise AIOptsError(f"{where}: 'opts.url' must be at most {MAX_URL} printable characters")


def _headers(value: Any, where: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and k and isinstance(v, str) for k, v in value.items()
    ):
        raise AIOptsError(f"{where}: 'opts.headers' must be an object of string header values")
    headers: dict[str, str] = {}
    for name, text in value.items():  # one of each name, in any case: the last one sent wins
        for same in [k for k in headers if k.lower() == name.lower()]:
            del headers[same]
        headers[name] = text
    return headers


def shown_url(url: str) -> str:
    """The URL fit for the timeline and logs: its query and user info (either may hold a key)
    dropped."""
    bare = url.split("?", 1)[0].split("#", 1)[0]
    scheme, sep, rest = bare.partition("://")
    if not sep:
        return bare.rpartition("@")[2]
    authority, slash, path = rest.partition("/")
    return f"{scheme}://{authority.rpartition('@')[2]}{slash}{path}"
