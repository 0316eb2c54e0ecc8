"""Concurrency scopes (Weir-only, in the function's `"weir"` block): an app-wide limit and up
to 8 resource scopes, each a static name, a CEL key, or both (docs/semantics.md, Scopes).

    "weir": {"scopes": [{"name": "stripe", "limit": 3}, {"key": "event.data.user", "limit": 1}],
             "appLimit": 20}

A run needs one slot of every scope it declares, all at once or none. Names are checked here;
evaluated keys follow the same rules, checked when a run is created (`check_key_text`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from weir.platform.foundation.jsonvalues import control_char
from weir.platform.functions.config import ScopeLimit
from weir.platform.functions.parse.cel_checks import EVENT_ONLY
from weir.platform.functions.parse.fields import read_expression, read_int, read_list, read_object
from weir.platform.functions.problems import Issues

MAX_SCOPES = 8
MAX_KEY_BYTES = 512
SCOPE_FIELDS = ("name", "key", "limit")
# The keys of the "weir" block this module reads; other helpers' options join this set.


def check_key_text(text: str) -> str | None:
    """Why `text` cannot name a scope (1–512 UTF-8 bytes, no control characters), or None."""
    size = len(text.encode())
    if size == 0:
        return "is empty; a scope key must be 1 to 512 UTF-8 bytes"
    if size > MAX_KEY_BYTES:
        return f"is {size} UTF-8 bytes; a scope key must be 1 to {MAX_KEY_BYTES}"
    found = control_char(text)
    if found:
        return f"holds the control character {found.group()!r}; a scope key must be printable"
    return None


def read_scopes(issues: Issues, block: Mapping[str, Any]) -> tuple[ScopeLimit, ...]:
    value = block.get("scopes")
    if value is None:
        return ()
    if isinstance(value, list) and len(value) > MAX_SCOPES:
        issues.add(
            "weir.scopes",
            f"too_many_scopes: at most {MAX_SCOPES} keyed scopes are allowed, got {len(value)}",
        )
        return ()
    items = read_list(issues, value, "weir.scopes", MAX_SCOPES) or []
    scopes = [_scope(issues, item, f"weir.scopes[{i}]") for i, item in enumerate(items)]
    return tuple(scope for scope in scopes if scope is not None)


def read_app_limit(issues: Issues, block: Mapping[str, Any]) -> int | None:
    value = block.get("appLimit")
    return None if value is None else read_int(issues, value, "weir.appLimit", 1)


def _scope(issues: Issues, value: Any, path: str) -> ScopeLimit | None:
    item = read_object(issues, value, path)
    if item is None:
        return None
    for field in item:
        if field not in SCOPE_FIELDS:
            issues.add(
                f"{path}.{field}", f"is not a scope field; allowed: {', '.join(SCOPE_FIELDS)}"
            )
    limit = read_int(issues, item.get("limit"), f"{path}.limit", 1)
    name = _name(issues, item.get("name"), f"{path}.name")
    key = read_expression(issues, item.get("key"), f"{path}.key", EVENT_ONLY)
    if item.get("name") is None and item.get("key") in (None, ""):
        issues.add(path, "needs a static `name`, a CEL `key`, or both")
        return None
    if limit is None or name is False:
        return None
    return ScopeLimit(limit=limit, name=name, key=key)


def _name(issues: Issues, value: Any, path: str) -> str | Literal[False] | None:
    """None when absent, False when invalid (recorded), else the name."""
    if value is None:
        return None
    if not isinstance(value, str):
        issues.add(path, f"must be a string of 1 to {MAX_KEY_BYTES} UTF-8 bytes")
        return False
    problem = check_key_text(value)
    if problem is not None:
        issues.add(path, problem.replace("a scope key", "a scope name"))
        return False
    return value
