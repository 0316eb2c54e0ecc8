"""Parsing a whole app sync (`POST /fn/register`): the app, then every function.

Every function is read even after an earlier one failed, so the SyncError lists every
problem at once; a sync with any problem registers nothing.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from weir.platform.functions.config import AppSync, FunctionConfig
from weir.platform.functions.connect_url import is_connect_url
from weir.platform.functions.parse.fields import read_list, read_object, read_text, refuse
from weir.platform.functions.parse.function import function_label, is_http_url, read_function
from weir.platform.functions.problems import Issues, SyncError

# SDKs set no limit; this only keeps one sync from being absurdly large.
MAX_FUNCTIONS = 1_000
MAX_NAME = 255  # the app's name, as the store keeps it
MAX_LABEL = 64  # sdk, framework, deploy type: short labels


def parse_sync(payload: Any) -> AppSync:
    """Validate a `POST /fn/register` body; SyncError lists every problem found."""
    app = Issues(function=None)
    body = read_object(app, payload, None)
    sync = None if body is None else _read_app(app, body)
    if sync is None or app.found:
        raise SyncError(app.found)
    return sync


def _read_app(app: Issues, body: Mapping[str, Any]) -> AppSync:
    _check_deploy_type(app, body)
    return AppSync(
        app_name=read_text(app, _either(body, "appname", "appName"), "appName", MAX_NAME) or "",
        url=_read_app_url(app, body.get("url")),
        sdk=_optional_text(app, body.get("sdk"), "sdk") or "",
        framework=_optional_text(app, body.get("framework"), "framework"),
        app_version=_optional_text(app, body.get("appVersion"), "appVersion", MAX_NAME),
        functions=_read_functions(app, body.get("functions")),
        checksum=checksum(body),
    )


def _either(body: Mapping[str, Any], first: str, second: str) -> Any:
    # The Python SDK writes "appname" / "deploy_type"; Go's own names are camelCase.
    return body[first] if body.get(first) is not None else body.get(second)


def _check_deploy_type(app: Issues, body: Mapping[str, Any]) -> None:
    _optional_text(app, _either(body, "deploy_type", "deployType"), "deployType")


def _optional_text(app: Issues, value: Any, option: str, max_length: int = MAX_LABEL) -> str | None:
    return None if value is None else read_text(app, value, option, max_length)


def _read_app_url(app: Issues, value: Any) -> str:
    if not (is_http_url(value) or is_connect_url(value)):  # wss://connect: a Connect worker
        refuse(app, "url", "the app's http:// or https:// serve URL", value)
    return value if isinstance(value, str) else ""


def _read_functions(app: Issues, value: Any) -> tuple[FunctionConfig, ...]:
    items = read_list(app, value, "functions", MAX_FUNCTIONS) or []
    labels = [function_label(item, index) for index, item in enumerate(items)]
    configs = [
        read_function(Issues(label, app.found), item)
        for label, item in zip(labels, items, strict=True)
    ]
    _check_unique_ids(app, labels)
    return tuple(config for config in configs if config is not None)


def _check_unique_ids(app: Issues, labels: list[str]) -> None:
    seen: set[str] = set()
    for label in labels:
        if label in seen:
            Issues(label, app.found).add("id", "another function of this app has the same id")
        seen.add(label)


def checksum(body: Mapping[str, Any]) -> str:
    """sha256 of the body's canonical JSON (sorted keys, no spaces), so key order is moot."""
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()
