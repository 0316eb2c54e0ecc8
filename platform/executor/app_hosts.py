"""The optional allow-list of app hosts (`--allowed-app-hosts`): Weir only syncs, and so only
ever calls, apps on these hosts — a guard against being pointed at arbitrary addresses.

An entry is `host` (any port), `host:port`, or `*.domain` (any host under domain)."""

from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit


def url_problem(
    url: str, allowed: tuple[str, ...], *, flag: str = "--allowed-app-hosts", what: str = "app"
) -> str | None:
    """None if the URL may be synced (or called), else what is wrong and what is allowed."""
    if not allowed:
        return None
    try:
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return f"the {what} URL {url!r} is not a valid URL"
    if parts.scheme not in ("http", "https") or not host:
        return f"the {what} URL {url!r} must be an http(s) URL with a host"
    if any(matches(entry.strip().lower(), host, port) for entry in allowed):
        return None
    action = "to sync this app" if what == "app" else f"to call this {what} URL"
    return (
        f"the {what} URL {url!r} is on host {host!r}, which {flag} does not allow "
        f"(allowed: {', '.join(allowed)}); add the host there {action}"
    )


def sync_problems(payload: Any, allowed: tuple[str, ...]) -> list[str]:
    """Every disallowed URL of a register payload: the app's and each function's."""
    if not allowed:
        return []
    problems = (url_problem(url, allowed) for url in _urls(payload))
    return sorted({p for p in problems if p})


def matches(entry: str, host: str, port: int) -> bool:
    """Whether an allow-list entry (lower-cased) admits `host` (lower-cased) on `port`."""
    if entry.startswith("*."):
        return host.endswith(entry[1:])
    name, sep, want_port = entry.rpartition(":") if entry.count(":") == 1 else ("", "", "")
    if sep:
        return host == name and str(port) == want_port
    return host == entry.strip("[]")


def _urls(payload: Any) -> Iterator[str]:
    if not isinstance(payload, dict):
        return
    if isinstance(payload.get("url"), str):
        yield payload["url"]
    functions = payload.get("functions")
    for fn in functions if isinstance(functions, list) else []:  # a bad shape: parse_sync says
        steps = fn.get("steps") if isinstance(fn, dict) else None
        for step in (steps or {}).values() if isinstance(steps, dict) else []:
            runtime = step.get("runtime") if isinstance(step, dict) else None
            if isinstance(runtime, dict) and isinstance(runtime.get("url"), str):
                yield runtime["url"]
