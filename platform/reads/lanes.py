"""FIFO lanes as operators see them: the busy lanes of a function (or of every function), each
with its queue length, holder (since when, its fence) and first run in line; one lane's line
in order. Pages are bounded (`limit`, an opaque `cursor`), so a lane with 100,000 runs in line
answers as fast as one with two.
"""

import base64
import json

from sqlalchemy import Connection
from weir.platform.foundation.record_type import record
from weir.platform.store.views import fifo_lanes as lane_reads
from weir.platform.store.views.fifo_lanes import LaneRow, Member, RunBrief

__all__ = ["LanePage", "LaneRow", "Member", "MemberPage", "Owner", "RunBrief"]

DEFAULT_LIMIT = 50
MAX_LIMIT = 500


class BadPaging(ValueError):
    """A limit or cursor that cannot be used; the message says what is allowed."""


@record
class Owner:
    """Whose lanes: one function's own (`function_id`), or a lane name shared by functions."""

    function_id: str | None
    name: str | None

    @property
    def scope(self) -> str:
        return lane_reads.scope_of(self.function_id or "", self.name)

    @classmethod
    def of(cls, scope: str) -> "Owner":
        if scope.startswith(lane_reads.NAME_SCOPE):
            return cls(None, scope.removeprefix(lane_reads.NAME_SCOPE))
        if scope.startswith(lane_reads.FUNCTION_SCOPE):
            return cls(scope.removeprefix(lane_reads.FUNCTION_SCOPE), None)
        return cls(None, None)  # a lane from before lanes recorded whose they are


@record
class LanePage:
    lanes: list[LaneRow]
    next_cursor: str | None


@record
class MemberPage:
    members: list[Member]
    next_cursor: str | None


def limit_of(raw: str | None) -> int:
    if raw is None:
        return DEFAULT_LIMIT
    if not raw.isdigit() or not 1 <= int(raw) <= MAX_LIMIT:
        raise BadPaging(f"limit must be a whole number from 1 to {MAX_LIMIT}, got {raw!r}")
    return int(raw)


def busy_lanes(conn: Connection, owner: Owner | None, cursor: str | None, limit: int) -> LanePage:
    """The lanes with a holder (every lane with runs in line has one), `owner`'s or all."""
    after = _lane_cursor(cursor)
    scope = None if owner is None else owner.scope
    rows = lane_reads.busy_lanes(conn, scope, after, limit + 1)
    more = len(rows) > limit
    rows = rows[:limit]
    nxt = encode_cursor([rows[-1].scope, rows[-1].lane]) if more else None
    return LanePage(rows, nxt)


def lane(conn: Connection, lane_hash: str) -> LaneRow | None:
    return lane_reads.lane(conn, lane_hash)


def members(conn: Connection, lane_hash: str, cursor: str | None, limit: int) -> MemberPage:
    """The runs in line behind the holder, first in line first."""
    after = _seq_cursor(cursor)
    found = lane_reads.members(conn, lane_hash, after, limit + 1)
    more = len(found) > limit
    found = found[:limit]
    return MemberPage(found, encode_cursor([found[-1].seq]) if more else None)


def encode_cursor(value: list[object]) -> str:
    """An opaque cursor (also how a benchmark or a test asks for a given page)."""
    return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")


def _decode(cursor: str) -> object:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        return json.loads(base64.urlsafe_b64decode(padded.encode("ascii")))
    except (ValueError, UnicodeError, RecursionError):  # a cursor nested past the parser
        return None


def _lane_cursor(cursor: str | None) -> tuple[str, str] | None:
    if cursor is None:
        return None
    value = _decode(cursor)
    if (
        isinstance(value, list)
        and len(value) == 2
        and all(isinstance(v, str) and v.isprintable() for v in value)
    ):
        return str(value[0]), str(value[1])
    raise BadPaging("cursor is not one this listing gave: pass the next_cursor of a lanes page")


def _seq_cursor(cursor: str | None) -> int | None:
    if cursor is None:
        return None
    value = _decode(cursor)
    # a stored number, not one past the database's integers
    if (
        isinstance(value, list)
        and len(value) == 1
        and type(value[0]) is int
        and abs(value[0]) < 2**62
    ):
        return int(value[0])
    raise BadPaging("cursor is not one this listing gave: pass the next_cursor of a members page")
