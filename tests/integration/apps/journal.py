"""Each app appends one line per step body it executes, so tests can count executions."""

import json
import os
import time
from typing import Any


def note(what: str, *, durable: bool = False, **extra: Any) -> None:
    """Append one line; `durable` fsyncs it, so an audit never misses an execution."""
    path = os.environ.get("WEIR_TEST_JOURNAL")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps({"what": what, "at": time.time(), **extra}) + "\n")
            if durable:
                f.flush()
                os.fsync(f.fileno())
