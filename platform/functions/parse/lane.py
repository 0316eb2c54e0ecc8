"""The `lane` option (Weir only, in the `weir` block): `{"key": "<CEL>", "name": "<text>"}`.

`key` picks the lane from the triggering event like any other key; `name` shares the lanes
with every function that names it (without one, the lanes are the function's own).
"""

from __future__ import annotations

from typing import Any

from weir.platform.functions.config import Lane
from weir.platform.functions.parse.cel_checks import EVENT_ONLY
from weir.platform.functions.parse.fields import read_expression, read_object, read_text
from weir.platform.functions.problems import Issues

PATH = "weir.lane"
FIELDS = ("key", "name")
MAX_NAME_BYTES = 512


def read_lane(issues: Issues, value: Any) -> Lane | None:
    if value is None:
        return None
    item = read_object(issues, value, PATH)
    if item is None:
        return None
    before = len(issues.found)
    for field in item:
        if field not in FIELDS:
            issues.add(f"{PATH}.{field}", f"is not a lane field; allowed: {', '.join(FIELDS)}")
    key = read_expression(issues, item.get("key"), f"{PATH}.key", EVENT_ONLY)
    name = _name(issues, item.get("name"))
    if item.get("key") in (None, "") and item.get("name") is None:
        issues.add(PATH, "needs a key (a CEL expression over event) or a name, or both")
    if len(issues.found) != before:
        return None
    return Lane(key=key, name=name)


def _name(issues: Issues, value: Any) -> str | None:
    if value is None:
        return None
    name = read_text(issues, value, f"{PATH}.name")
    if name is not None and len(name.encode()) > MAX_NAME_BYTES:
        size = len(name.encode())
        issues.add(f"{PATH}.name", f"must be at most {MAX_NAME_BYTES} UTF-8 bytes, got {size}")
        return None
    return name
