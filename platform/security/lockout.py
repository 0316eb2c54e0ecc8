"""Back-off for failed credentials: logins (Basic, the login form) and key checks (event keys,
signing keys).

A few failures are free; past them each further failure locks its key for twice as long as
the last (2 s, 4 s, 8 s, ... up to the policy's cap), and while a key is locked every attempt
on it is refused with 429 before any credential is checked, so a guess made then tells
nothing. What is locked is chosen so that an attacker locks out only themselves:
- a login, per (user name, client address), and per address over every name (a flood of
  names from one address); never per user name alone: guesses from elsewhere must not lock
  the admin out of their own address;
- key checks, per client address: a wrong event key or signing key from one address never
  slows another;
- never the admin token: a valid one is always accepted (it must be at least 128 bits,
  security/strength.py, which no guessing rate reaches), so nobody can lock the operator's
  tools out by guessing.
Records fade after a quiet hour, and the table is bounded: an attacker with many addresses
only pushes out the oldest records. Kept in memory, per process, on purpose: a restart costing
an attacker's progress nothing is acceptable; a store write per failed guess is not.
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


LOGIN = Policy(free=5, cap_ms=15 * 60 * 1000)  # one user name from one address
ADDRESS = Policy(free=50, cap_ms=15 * 60 * 1000)  # every user name from one address
KEYS = Policy(free=20, cap_ms=60 * 1000)  # event and signing keys from one address


@dataclass
class _Record:
    failures: int = 0
    locked_until: int = 0
    last: int = 0


Key = tuple[str, Policy]


class Lockout:
    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.records: OrderedDict[str, _Record] = OrderedDict()

    # -- logins
    def retry_after_s(self, client: str, user: str | None) -> int:
        """0 if a login may be checked now; else the seconds until it may."""
        return self._wait(_login_keys(client, user))

    def failed(self, client: str, user: str | None) -> None:
        self._fail(_login_keys(client, user))

    def succeeded(self, client: str, user: str | None) -> None:
        for name, _ in _login_keys(client, user):
            self.records.pop(name, None)

    # -- key checks
    def key_retry_after_s(self, client: str) -> int:
        """0 if a key from `client` may be checked now; else the seconds until it may."""
        if not self.records:  # the usual case, and every event's: nothing to look up
            return 0
        return self._wait([_key_check(client)])

    def key_failed(self, client: str) -> None:
        self._fail([_key_check(client)])

    # --
    def _wait(self, keys: list[Key]) -> int:
        now = self.clock.now_ms()
        until = max(self._locked_until(name, now) for name, _ in keys)
        return 0 if until <= now else -(-(until - now) // 1000)

    def _fail(self, keys: list[Key]) -> None:
        now = self.clock.now_ms()
        for name, policy in keys:
            record = self._fresh(name, now)
            record.failures += 1
            record.last = now
            over = record.failures - policy.free
            if over > 0:
                record.locked_until = now + min(FIRST_LOCK_MS << min(over - 1, 30), policy.cap_ms)

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


def _login_keys(client: str, user: str | None) -> list[Key]:
    keys: list[Key] = [(f"address\0{client}", ADDRESS)]
    if user is not None:  # a guessed name may be huge: bound the table
        keys.append((f"login\0{client}\0{user[:MAX_NAME]}", LOGIN))
    return keys


def _key_check(client: str) -> Key:
    return (f"key\0{client}", KEYS)
