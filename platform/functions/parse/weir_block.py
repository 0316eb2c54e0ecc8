"""The Weir-only options of a function: one object, `weir`, beside Inngest's options.

weir.sdk sends it as the `weir` key of the function's config. The official SDK's config model
drops keys it does not know, so an official-SDK app carries the same object (through
`weir.sdk.official.weir_options`) as compact JSON in the `weir` query parameter of the
function's step URL; Weir takes it out of the URL at sync, so the app is called without it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from weir.platform.functions.parse.fields import read_object
from weir.platform.functions.problems import Issues

BLOCK = "weir"
URL_PARAM = "weir"
MAX_URL_BLOCK = 16 * 1024  # characters of JSON in the URL: far more than the options need
# Every key the block may hold; each is read by its own module.
ALLOWED = ("lane", "rollingWindows", "scopes", "appLimit")


def split_url(url: str) -> tuple[str, list[str]]:
    """The step URL without its `weir` parameters, and their values."""
    try:
        parts = urlsplit(url)
    except ValueError:  # not a URL at all: the URL check names the problem
        return url, []
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    found = [value for key, value in pairs if key == URL_PARAM]
    if not found:
        return url, []
    kept = [(key, value) for key, value in pairs if key != URL_PARAM]
    return urlunsplit(parts._replace(query=urlencode(kept))), found


def read_block(issues: Issues, item: Mapping[str, Any], in_url: list[str]) -> Mapping[str, Any]:
    """The function's Weir-only options ({} without any); unknown keys are problems."""
    given = item.get(BLOCK)
    if in_url:
        if given is not None or len(in_url) > 1:
            issues.add(BLOCK, "is given more than once (config key and step URL parameter)")
            return {}
        given = _from_url(issues, in_url[0])
    if given is None:
        return {}
    block = read_object(issues, given, BLOCK)
    if block is None:
        return {}
    for key in block:
        if key not in ALLOWED:
            issues.add(f"{BLOCK}.{key}", f"is not a Weir option; allowed: {', '.join(ALLOWED)}")
    return block


def _from_url(issues: Issues, text: str) -> Any:
    where = f"the step URL's '{URL_PARAM}' parameter"
    if len(text) > MAX_URL_BLOCK:
        issues.add(BLOCK, f"{where} must be at most {MAX_URL_BLOCK} characters, got {len(text)}")
        return None
    try:
        return json.loads(text)
    except ValueError as error:
        issues.add(BLOCK, f"{where} must be a JSON object, but it is not JSON ({error})")
        return None
