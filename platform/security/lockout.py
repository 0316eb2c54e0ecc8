"""Back-off for failed logins (Basic, the admin token as Bearer, the login form).

Failures are counted per client address and per user name. A few are free; past them each
further failure locks that key for twice as long as the last (2 s, 4 s, 8 s, ... up to a cap),
and while a key is locked every attempt on it is refused with 429 before any credential is
checked, so a guess made then tells nothing. The per-user count allows more failures (they
add up over every client) and caps lower, so nobody can lock the admin out for long. Records
fade after a quiet hour, and the table is bounded: an attacker with many addresses only
pushes out the oldest records. Kept in memory, per process, on purpose: a restart costing an
attacker's progress nothing is acceptable; a store write per failed guess is not.
"""

from collections import OrderedDict
from dataclasses import dataclass

from weir.platform.foundation.clock import Clock

QUIET_MS = 3600 * 1000  # a key without failures for this long starts afresh
MAX_KEYS = 10_000
FIRST_LOCK_MS = 2000
MAX_NAME = 256


@dataclass(frozen=True)
class Policy:
    free: int  # failures before the first lock
    cap_ms: int  # the longest one lock lasts


CLIENT = Policy(free=5, cap_ms=15 * 60 * 1000)
USER = Policy(free=20, cap_ms=5 * 60 * 1000)


@dataclass
class _Record:
    failures: int = 0
    locked_until: int = 0
    last: int = 0


class Lockout:
    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.records: OrderedDict[str, _Record] = OrderedDict()

    def retry_after_s(self, client: str, user: str | None) -> int:
        """0 if an attempt may be checked now; else the seconds until it may."""
        now = self.clock.now_ms()
        until = max(self._locked_until(k, now) for k in _keys(client, user))
        return 0 if until <= now else -(-(until - now) // 1000)

    def failed(self, client: str, user: str | None) -> None:
        now = self.clock.now_ms()
        for key, policy in zip(_keys(client, user), (CLIENT, USER), strict=False):
            record = self._fresh(key, now)
            record.failures += 1
            record.last = now
            over = record.failures - policy.free
            if over > 0:
                record.locked_until = now + min(FIRST_LOCK_MS << min(over - 1, 30), policy.cap_ms)

    def succeeded(self, client: str, user: str | None) -> None:
        for key in _keys(client, user):
            self.records.pop(key, None)

    def _locked_until(self, key: str, now: int) -> int:
        record = self.records.get(key)
        return record.locked_until if record is not None and not _faded(record, now) else 0

    def _fresh(self, key: str, now: int) -> _Record:
        record = self.records.pop(key, None)
        if record is None or _faded(record, now):
            record = _Record()
        self.records[key] = record  # most recent last: the oldest go first when full
        while len(self.records) > MAX_KEYS:
            self.records.popitem(last=False)
        return record


def _faded(record: _Record, now: int) -> bool:
    return now - max(record.last, record.locked_until) > QUIET_MS


def _keys(client: str, user: str | None) -> list[str]:
    keys = [f"client\0{client}"]
    if user is not None:
        keys.append(f"user\0{user[:MAX_NAME]}")  # a guessed name may be huge: bound the table
    return keys
