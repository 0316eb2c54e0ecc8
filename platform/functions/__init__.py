"""Function configs: an app's sync parsed and validated into typed, immutable configs."""

from weir.platform.functions.config import (
    AppSync,
    Batching,
    CancelOn,
    ConcurrencyLimit,
    CronTrigger,
    Debounce,
    EventTrigger,
    FunctionConfig,
    Problem,
    RateLimit,
    RollingWindow,
    Singleton,
    SyncError,
    Throttle,
    Timeouts,
    Trigger,
)
from weir.platform.functions.durations import parse_duration_ms
from weir.platform.functions.matching import trigger_patterns
from weir.platform.functions.sync_parse import parse_sync

__all__ = [
    "AppSync",
    "Batching",
    "CancelOn",
    "ConcurrencyLimit",
    "CronTrigger",
    "Debounce",
    "EventTrigger",
    "FunctionConfig",
    "Problem",
    "RateLimit",
    "RollingWindow",
    "Singleton",
    "SyncError",
    "Throttle",
    "Timeouts",
    "Trigger",
    "parse_duration_ms",
    "parse_sync",
    "trigger_patterns",
]
