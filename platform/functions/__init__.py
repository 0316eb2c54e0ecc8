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
    Lane,
    RateLimit,
    RollingWindow,
    Singleton,
    Throttle,
    Timeouts,
    Trigger,
)
from weir.platform.functions.connect_url import CONNECT_URL, is_connect_url
from weir.platform.functions.matching import trigger_patterns
from weir.platform.functions.parse.durations import parse_duration_ms
from weir.platform.functions.parse.sync import parse_sync
from weir.platform.functions.problems import Problem, SyncError

__all__ = [
    "CONNECT_URL",
    "AppSync",
    "Batching",
    "CancelOn",
    "ConcurrencyLimit",
    "CronTrigger",
    "Debounce",
    "EventTrigger",
    "FunctionConfig",
    "Lane",
    "Problem",
    "RateLimit",
    "RollingWindow",
    "Singleton",
    "SyncError",
    "Throttle",
    "Timeouts",
    "Trigger",
    "is_connect_url",
    "parse_duration_ms",
    "parse_sync",
    "trigger_patterns",
]
