"""The context every state transition runs in: one connection inside one transaction."""

import random
from dataclasses import dataclass, field

from sqlalchemy import Connection
from weir.platform.observability.notes import Note
from weir.platform.registry import Registry


@dataclass
class Tx:
    conn: Connection
    now: int
    registry: Registry
    rng: random.Random = field(default_factory=random.Random)
    retry_delay_ms: int | None = None  # a fixed retry delay instead of the backoff table (dev)
    enqueued: int = 0  # items added: the scheduler is woken after the commit
    notes: list[Note] = field(default_factory=list)  # logged and counted after the commit
