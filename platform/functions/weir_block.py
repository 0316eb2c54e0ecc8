"""The `weir` block of a function's config: Weir-only options, one key per feature.

Apps send options Inngest has no field for under one key, `"weir"`; each feature reads its own
key from the block (its own module), and a key nobody reads is a sync error naming the
allowed ones, so a typo never silently drops a limit.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from weir.platform.functions.fields import read_object
from weir.platform.functions.problems import Issues

BLOCK = "weir"
ALLOWED_KEYS = ("rollingWindows",)


def read_block(issues: Issues, value: Any) -> Mapping[str, Any]:
    """The block's keys ({} when absent); unknown keys are recorded as problems."""
    if value is None:
        return {}
    block = read_object(issues, value, BLOCK)
    if block is None:
        return {}
    allowed = ", ".join(repr(key) for key in ALLOWED_KEYS)
    for key in block:
        if key not in ALLOWED_KEYS:
            issues.add(f"{BLOCK}.{key}", f"is not a Weir option; allowed keys: {allowed}")
    return block
