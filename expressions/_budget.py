"""The budget every evaluation runs under, and where it comes from.

Defaults (each may be set by an environment variable, read once, or by `configure_budget`):

- time: 200 ms per evaluation (`WEIR_CEL_BUDGET_MS`). An evaluation that is not provably cheap
  runs in a worker process that is killed when the time is up; the caller waits no longer.
- memory: 512 MiB address space per worker process (`WEIR_CEL_MEMORY_MIB`). Past it the Rust
  evaluator aborts the worker, never the caller.
- result: 64 KiB per result, pickled (`WEIR_CEL_RESULT_KIB`). A result is a condition, a key
  or a priority; anything larger is a runaway `map`, refused before it is sent back.
- workers: 2 processes at most (`WEIR_CEL_WORKERS`), started on first need.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

_DEFAULT_MS = 200
_DEFAULT_MEMORY_MIB = 512
_DEFAULT_RESULT_KIB = 64
_DEFAULT_WORKERS = 2


@dataclass(frozen=True)
class Budget:
    time_ms: int = _DEFAULT_MS
    memory_bytes: int = _DEFAULT_MEMORY_MIB * 1024 * 1024
    result_bytes: int = _DEFAULT_RESULT_KIB * 1024
    workers: int = _DEFAULT_WORKERS

    def __post_init__(self) -> None:
        if min(self.time_ms, self.memory_bytes, self.result_bytes, self.workers) < 1:
            raise ValueError(f"every part of an expression budget must be positive: {self}")


def _from_environment() -> Budget:
    def number(name: str, default: int) -> int:
        text = os.environ.get(name, "").strip()
        return int(text) if text else default

    return Budget(
        time_ms=number("WEIR_CEL_BUDGET_MS", _DEFAULT_MS),
        memory_bytes=number("WEIR_CEL_MEMORY_MIB", _DEFAULT_MEMORY_MIB) * 1024 * 1024,
        result_bytes=number("WEIR_CEL_RESULT_KIB", _DEFAULT_RESULT_KIB) * 1024,
        workers=number("WEIR_CEL_WORKERS", _DEFAULT_WORKERS),
    )


_current: Budget | None = None


def current_budget() -> Budget:
    global _current
    if _current is None:
        _current = _from_environment()
    return _current


def configure_budget(budget: Budget) -> Budget:
    """Use `budget` from now on; returns the one it replaces (tests put it back)."""
    global _current
    previous = current_budget()
    _current = budget
    return previous
