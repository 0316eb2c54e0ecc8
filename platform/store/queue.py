"""The durable queue: enqueue, claim under concurrency limits, finish, lease upkeep.

A run's first call may carry a throttle and rolling windows: the claim checks them on the start
itself, in the same transaction (`rolling_windows`, then `start_throttle`), and defers a start
that would come too soon.

Every item sits in a lane: all items of runs that carry the same concurrency keys. A lane is
looked at from `lanes.next_at`; when its head needs a slot of a full key, the lane is parked on
that key (`blocked_on`) and the claimer never reads its items again until a slot of that key is
released. So a hot key with thousands of queued runs costs other keys nothing.

`available_at` doubles as the lease: claiming moves it to the lease's end, so an item whose
holder died becomes claimable again by itself, and the lane's next look is `min(available_at)`.
A lane's `next_at` may be earlier than its head (never later): removing items leaves the lane
as it is, and the claim that looks at it early, or finds it empty, sets it right.
Each claim writes a fresh token into `lease_owner`; finishing an item requires that token, so a
holder whose lease was taken over can never commit a stale transition.

Several processes may claim from one PostgreSQL: a claimer locks the lanes it works on
(`FOR UPDATE SKIP LOCKED`, so two claimers never wait for each other or take the same item),
and counts and takes a key's slots only while holding that key's lock (`dialect.try_lock`;
releasing slots waits for it), so a limit shared by several lanes is never exceeded. Anything
that may delete a lane row locks it first, so an item enqueued meanwhile never loses its lane.

A lane may need many keys at once (concurrency limits, the app limit, resource scopes): its
items take a slot of every one in the claim's transaction or of none, the keys locked in one
order (by hash), each sized by its live capacity when it has one (`capacity.stored_size`,
read with the key's count under its lock).
"""

import itertools
import secrets
from collections.abc import Callable, Collection
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple, Protocol

from sqlalchemy import (
    Connection,
    case,
    delete,
    exists,
    func,
    insert,
    or_,
    select,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite
from weir.platform.records import record
from weir.platform.store import (
    capacity,
    dialect,
    fences,
    json_text,
    rolling_windows,
    start_throttle,
)
from weir.platform.store.due_lanes import due_before, due_lanes, not_skipped
from weir.platform.store.fast import Fast, off_index
from weir.platform.store.fast import param as _p
from weir.platform.store.schema import lanes, queue, slots
from weir.platform.vocabulary import QueueKind

TIMER_LANE = "~timers"
# Lease tokens: unique, not secret. A random prefix per process and a counter: no system call
# (and no hand-off of the GIL) per claimed item.
_TOKEN_PREFIX = secrets.token_hex(6)
_TOKEN_COUNTER = itertools.count(1)


def _new_token() -> str:
    return f"{_TOKEN_PREFIX}{next(_TOKEN_COUNTER):x}"


class Limit(NamedTuple):
    """One concurrency key a lane's items need a slot of: its hash, the limit its code declared,
    and the stored capacity that overrides the declared limit ("" for none: the declared one
    holds). A lane's limits are stored as JSON lists in this order."""

    key: str
    limit: int
    capacity: str = ""

    @property
    def unlimited(self) -> bool:
        """A declared 0 with no stored capacity: no slot to count."""
        return self.limit <= 0 and not self.capacity


def limits_from_json(pairs: Any) -> tuple[Limit, ...]:
    """Lanes stored before capacities carry [key, limit] pairs; they read with no capacity."""
    return tuple(Limit(str(p[0]), int(p[1]), str(p[2]) if len(p) > 2 else "") for p in pairs)


# Statements are built once: building a SQLAlchemy expression costs more than executing it.
# An item whose dedupe text is queued already is not added: the unique index says so in the
# same statement (NULL dedupes never conflict).
_ITEM_COLUMNS = (
    "kind",
    "run_id",
    "function_id",
    "step_id",
    "attempt",
    "available_at",
    "score",
    "lane",
    "payload",
    "dedupe",
    "created_at",
)
_INSERT_ITEM = {
    "sqlite": Fast(
        sqlite.insert(queue).on_conflict_do_nothing().returning(queue.c.id), _ITEM_COLUMNS
    ),
    "postgresql": Fast(
        postgresql.insert(queue).on_conflict_do_nothing().returning(queue.c.id), _ITEM_COLUMNS
    ),
}
# An item inserted already leased (`enqueue_claimed`), in one statement: no dedupe of its own
# (a new item of the same name may be queued while it is in flight), and not inserted if an
# item with the dedupe it was asked for is queued. On PostgreSQL that check could race another
# transaction's insert, which only the unique index stops: items with a dedupe there take the
# insert and then the lease.
_LEASED_COLUMNS = (*(c for c in _ITEM_COLUMNS if c != "dedupe"), "lease_owner", "claimed_at")
_INSERT_LEASED = Fast(
    insert(queue)
    .from_select(
        list(_LEASED_COLUMNS),
        select(*(_p(c) for c in _LEASED_COLUMNS)).where(
            ~exists().where(queue.c.dedupe == _p("dedupe"))
        ),
    )
    .returning(queue.c.id)
)
_INSERT_LEASED_PG = Fast(postgresql.insert(queue).returning(queue.c.id), _LEASED_COLUMNS)
# A run's finished call becomes its next call, leased anew (`enqueue_in_place`): one row
# rewritten instead of one deleted and one inserted, each with its four indexes.
_REUSE_WHERE = (
    queue.c.id == _p("id"),
    queue.c.lease_owner == _p("old_token"),
    ~exists().where(queue.c.dedupe == _p("dedupe")),
)
_REUSE_VALUES = {
    "step_id": _p("step_id"),
    "attempt": _p("attempt"),
    "available_at": _p("until"),
    "score": _p("score"),
    "payload": _p("payload"),
    "created_at": _p("now"),
    "lease_owner": _p("token"),
    "claimed_at": _p("now"),
    "series": queue.c.series + 1,
}
_REUSE = Fast(update(queue).where(*_REUSE_WHERE).values(_REUSE_VALUES))
# The same where the lane needs no change: it was right for the row as it stood (looked at no
# later than its due time, ordered no later than its score), so it is right for the row made
# no earlier and no lower.
_REUSE_SAME_LANE = Fast(
    update(queue)
    .where(*_REUSE_WHERE, queue.c.available_at <= _p("until"), queue.c.score <= _p("score"))
    .values(_REUSE_VALUES)
)
_DEDUPE = select(queue.c.id, queue.c.lane).where(queue.c.dedupe == _p("dedupe"))
_LANE = select(lanes.c.next_at, lanes.c.head_score, lanes.c.blocked_on).where(
    lanes.c.lane == _p("lane")
)
_LANE_LOCKED = Fast(_LANE.with_for_update())
_UPDATE_LANE = update(lanes).where(lanes.c.lane == _p("lane"))
_UPDATE_LANE_HEAD = Fast(_UPDATE_LANE, ("next_at", "head_score", "blocked_on"))
_PARK_LANE = Fast(_UPDATE_LANE, ("blocked_on", "next_at"))


def _lane_upsert(ins: Any, smaller: Any) -> Fast:
    """Create the lane, or move its head earlier: the lowest score, and the earliest due time
    unless the lane is parked (its head still needs the key). One statement; a lane already
    right is not written. On PostgreSQL the upsert locks the row like `FOR UPDATE` did, and an
    insert racing a delete of the lane is retried by the database itself. A lane that does not
    name its function yet (made before migration 0012, or by an older process sharing the
    database) learns it, so that a claim skipping the function passes it over."""
    new = ins.excluded
    stmt = ins.on_conflict_do_update(
        index_elements=[lanes.c.lane],
        set_={
            "head_score": smaller(lanes.c.head_score, new.head_score),
            "next_at": case(
                (lanes.c.blocked_on.is_(None), smaller(lanes.c.next_at, new.next_at)),
                else_=lanes.c.next_at,
            ),
            "function_id": func.coalesce(lanes.c.function_id, new.function_id),
        },
        where=or_(
            new.head_score < lanes.c.head_score,
            lanes.c.blocked_on.is_(None) & (new.next_at < lanes.c.next_at),
            lanes.c.function_id.is_(None) & new.function_id.is_not(None),
        ),
    )
    return Fast(stmt, ("lane", "next_at", "head_score", "limits", "function_id"))


_TOUCH_LANE = {
    "sqlite": _lane_upsert(sqlite.insert(lanes), func.min),
    "postgresql": _lane_upsert(postgresql.insert(lanes), func.least),
}
_EARLIEST_SLOT_END = Fast(
    select(func.min(slots.c.expires_at)).where(
        slots.c.key_hash == _p("key"), slots.c.expires_at > _p("now")
    )
)
# A lane's due items in claim order. SQLite would take the index on (lane, available_at) and
# sort every due item of the lane for each claim: a cost that grows with the lane's backlog.
# So it looks at the first ITEMS_WINDOW items in claim order (those in flight, mostly), and
# sorts the lane's due items only when those held fewer than wanted (items a throttle deferred
# keep their score and wait at the front, not due). PostgreSQL keeps one statement and its
# planner's choice.
ITEMS_WINDOW = 64
_ITEM_ORDER = (queue.c.score, queue.c.id)
_DUE_ITEMS = Fast(  # PostgreSQL
    select(queue)
    .where(queue.c.lane == _p("lane"), queue.c.available_at <= _p("now"))
    .order_by(*_ITEM_ORDER)
    .limit(_p("limit"))
    .with_for_update(skip_locked=True)  # e.g. an expired lease its old holder is finishing
)
# the first ITEMS_WINDOW items in claim order, read from the index alone: many share a score
_FIRST_ITEMS = (
    select(queue.c.id).where(queue.c.lane == _p("lane")).order_by(*_ITEM_ORDER).limit(_p("window"))
)
_DUE_ITEMS_WALK = Fast(
    select(queue)
    .where(queue.c.id.in_(_FIRST_ITEMS), queue.c.available_at <= _p("now"))
    .order_by(*_ITEM_ORDER)
    .limit(_p("limit"))
)
_LANE_ITEMS_PAST = Fast(  # whether the lane holds more items than the window
    select(queue.c.id).where(queue.c.lane == _p("lane")).limit(1).offset(_p("window"))
)
_DUE_ITEMS_SORT = Fast(
    select(queue)
    .where(queue.c.lane == _p("lane"), queue.c.available_at <= _p("now"))
    .order_by(off_index(queue.c.score), queue.c.id)
    .limit(_p("limit"))
)
_LEASE = Fast(
    update(queue)
    .where(queue.c.id == _p("id"))
    .values(available_at=_p("until"), lease_owner=_p("token"), dedupe=None, claimed_at=_p("now"))
)
_DELETE_SLOT = Fast(delete(slots).where(slots.c.key_hash == _p("key"), slots.c.item_id == _p("id")))
# A finished item's slot handed to the next holder (`hand_on`): the same row, a new item;
# not if the new holder still has a row of its own (a lapsed lease: the claim renews those).
_HELD = slots.alias("held")
_STALE_ROW = select(_HELD.c.item_id).where(
    _HELD.c.key_hash == _p("key"), _HELD.c.item_id == _p("new")
)
_MOVE_SLOT = Fast(
    update(slots)
    .where(slots.c.key_hash == _p("key"), slots.c.item_id == _p("old"), ~exists(_STALE_ROW))
    .values(item_id=_p("new"), expires_at=_p("until"))
)
# A key's slots in use but those of one item (0: none is left out)
_USED_BUT = select(func.count()).where(
    slots.c.key_hash == _p("key"), slots.c.expires_at > _p("now"), slots.c.item_id != _p("id")
)
_IN_USE_BY_OTHERS = Fast(_USED_BUT)
# ... with the key's stored capacity (NULL: none stored, the declared limit holds): the claim
# reads both under the key's lock.
_SIZE_AND_USE = Fast(
    select(
        capacity.stored_size(_p("cap")).label("stored"),
        _USED_BUT.scalar_subquery().label("used"),
    )
)
_OTHER_PARKED = Fast(
    select(lanes.c.lane).where(lanes.c.blocked_on == _p("key"), lanes.c.lane != _p("lane")).limit(1)
)


def _slot_upsert(stmt: Any) -> Fast:
    """Take an item's slot of a key, or renew it (an item claimed again after its lease ran
    out still has its row): one statement."""
    stmt = stmt.on_conflict_do_update(
        index_elements=[slots.c.key_hash, slots.c.item_id],
        set_={"expires_at": stmt.excluded.expires_at},
    )
    return Fast(stmt, ("key_hash", "item_id", "expires_at"))


_TAKE_SLOT = {
    "sqlite": _slot_upsert(sqlite.insert(slots)),
    "postgresql": _slot_upsert(postgresql.insert(slots)),
}
# After a claim leased items of a lane, the lane still has items (those at least): its head
# is read and written by one statement.
_HEAD_OF = (
    select(queue.c.available_at, queue.c.score)
    .where(queue.c.lane == lanes.c.lane)
    .order_by(queue.c.available_at)
    .limit(1)
)
_MOVE_HEAD = Fast(
    update(lanes)
    .where(lanes.c.lane == _p("lane"))
    .values(
        next_at=_HEAD_OF.with_only_columns(queue.c.available_at).scalar_subquery(),
        head_score=_HEAD_OF.with_only_columns(queue.c.score).scalar_subquery(),
        blocked_on=None,
    )
)
_PARK_AT_HEAD = Fast(
    update(lanes)
    .where(lanes.c.lane == _p("lane"))
    .values(
        next_at=_p("until"),
        head_score=_HEAD_OF.with_only_columns(queue.c.score).scalar_subquery(),
        blocked_on=_p("key"),
    )
)
_LANE_HEAD = Fast(
    select(queue.c.available_at, queue.c.score)
    .where(queue.c.lane == _p("lane"))
    .order_by(queue.c.available_at)
    .limit(1)
)
_DELETE_LANE = Fast(delete(lanes).where(lanes.c.lane == _p("lane")))
_FINISH = Fast(delete(queue).where(queue.c.id == _p("id"), queue.c.lease_owner == _p("token")))
_WAKE_PARKED = Fast(
    update(lanes).where(lanes.c.blocked_on == _p("key")).values(blocked_on=None, next_at=_p("now"))
)
_RETRY = Fast(
    update(queue)
    .where(queue.c.id == _p("id"), queue.c.lease_owner == _p("token"))
    .values(available_at=_p("at"), score=_p("at"), attempt=_p("attempt"), lease_owner=None)
)
_EXTEND_ITEM = Fast(
    update(queue)
    .where(queue.c.id == _p("id"), queue.c.lease_owner == _p("token"))
    .values(available_at=_p("until"))
)
# By (key, item), the primary key: by item alone would scan every held slot of every key.
_EXTEND_SLOT = Fast(
    update(slots)
    .where(slots.c.key_hash == _p("key"), slots.c.item_id == _p("id"))
    .values(expires_at=_p("until"))
)
_RUN_ITEMS = Fast(
    select(queue.c.id, queue.c.kind, queue.c.lease_owner, queue.c.available_at).where(
        queue.c.run_id == _p("run")
    )
)
_DELETE_ITEM = Fast(delete(queue).where(queue.c.id == _p("id")))
_HAND_BACK = Fast(
    update(queue)
    .where(queue.c.id == _p("id"), queue.c.lease_owner == _p("token"))
    .values(available_at=_p("now"), lease_owner=None)
)
_NEXT_DUE_QUERY = select(func.min(lanes.c.next_at))
_NEXT_DUE = Fast(_NEXT_DUE_QUERY)


@record
class NewItem:
    kind: str
    available_at: int
    score: int
    lane: str
    run_id: str | None = None
    function_id: str | None = None
    step_id: str = "step"
    attempt: int = 0
    payload: dict[str, Any] = field(default_factory=dict)
    dedupe: str | None = None
    limits: tuple[Limit, ...] = ()  # the concurrency keys of the lane


@record
class Claimed:
    id: int
    kind: str
    run_id: str | None
    function_id: str | None
    step_id: str
    attempt: int
    payload: dict[str, Any]
    lane: str
    token: str
    keys: tuple[str, ...]  # concurrency keys whose slots this item holds
    claimed_at: int
    fences: dict[str, int] = field(default_factory=dict)  # key hash -> token, keys of limit 1
    limits: tuple[Limit, ...] = ()  # the lane's limits, whose keys these are (`hand_on`)
    series: int = 0  # calls the row carried before this one (`enqueue_in_place`)


def enqueue(conn: Connection, item: NewItem) -> int | None:
    """Add an item; an item whose `dedupe` text is already queued is not added again."""
    item_id = _INSERT_ITEM[conn.dialect.name].scalar(conn, _row(item))
    if item_id is None:
        return None
    _touch_lane(conn, item)
    dialect.notify(conn, dialect.WAKE)  # other processes' schedulers may sleep past it
    return int(item_id)


def enqueue_claimed(conn: Connection, item: NewItem, now: int, lease_ms: int) -> Claimed | None:
    """Add an item already leased to the caller, who works on it at once: the transaction that
    makes a run's next call also claims it, with no claim of its own. None if an item with the
    same `dedupe` is queued already (that one goes the usual way). Only for items that need no
    concurrency slot and no start throttle (the claim decides those)."""
    if item.limits or item.payload:
        raise ValueError("an item with concurrency limits or a start throttle must be claimed")
    until, token = now + lease_ms, _new_token()
    item_id = _insert_leased(conn, item, until, token, now)
    if item_id is None:
        return None
    # The lane must know the item, to be looked at when the lease would run out; never earlier
    # than it needs (an earlier look would only find the item leased).
    _touch_lane(conn, replace(item, available_at=until))
    return Claimed(
        id=int(item_id),
        kind=item.kind,
        run_id=item.run_id,
        function_id=item.function_id,
        step_id=item.step_id,
        attempt=item.attempt,
        payload={},
        lane=item.lane,
        token=token,
        keys=(),
        claimed_at=now,
    )


def enqueue_in_place(
    conn: Connection, done: Claimed, item: NewItem, now: int, lease_ms: int
) -> Claimed | None:
    """`enqueue_claimed` for the next call of `done`'s run, made of `done`'s own row: the
    finished call is gone and the new one leased to the caller in one statement. `item` must
    be a call of the same run and lane as `done`, needing no slot or throttle, as
    `enqueue_claimed` requires, and `done` must hold no slots. None if an item with the same
    `dedupe` is queued already: `done` is then finished, and the new item goes the usual way.
    Raises LeaseLost as `finish` does."""
    if not _takes_row(done, item):
        raise ValueError("only a slotless call of the same run and lane takes a finished row")
    until, token = now + lease_ms, _new_token()
    values = {
        "b_id": done.id,
        "b_old_token": done.token,
        "b_dedupe": item.dedupe,
        "b_step_id": item.step_id,
        "b_attempt": item.attempt,
        "b_until": until,
        "b_score": item.score,
        "b_payload": _NO_PAYLOAD,
        "b_now": now,
        "b_token": token,
    }
    if _REUSE_SAME_LANE.rowcount(conn, values) != 1:
        if _REUSE.rowcount(conn, values) != 1:
            finish(conn, done, now)  # lost (raises), or the dedupe is queued: done ends here
            return None
        # as `enqueue_claimed`: the lane is looked at no later than the lease would run out
        _touch_lane(conn, replace(item, available_at=until))
    return replace(
        done,
        step_id=item.step_id,
        attempt=item.attempt,
        payload={},
        token=token,
        claimed_at=now,
        series=done.series + 1,
    )


def _takes_row(done: Claimed, item: NewItem) -> bool:
    """`item` may take `done`'s row: a call of the same run and lane, and neither holds or
    needs a slot or a start throttle."""
    slotless = not (item.limits or item.payload or done.keys)
    return slotless and done.run_id == item.run_id and done.lane == item.lane


def _insert_leased(conn: Connection, item: NewItem, until: int, token: str, now: int) -> Any:
    """The new item's id, leased as a claim leases it; None if its dedupe is queued already."""
    row = _row(item) | {"available_at": until}
    leased = {**row, "lease_owner": token, "claimed_at": now}  # its `dedupe`: only checked
    if not dialect.is_postgres(conn):
        return _INSERT_LEASED.scalar(conn, {f"b_{key}": value for key, value in leased.items()})
    if item.dedupe is None:
        return _INSERT_LEASED_PG.scalar(conn, leased)
    item_id = _INSERT_ITEM[conn.dialect.name].scalar(conn, row)
    if item_id is not None:
        _LEASE.run(conn, {"b_id": item_id, "b_until": until, "b_token": token, "b_now": now})
    return item_id


def _row(item: NewItem) -> dict[str, Any]:
    return {
        "kind": item.kind,
        "run_id": item.run_id,
        "function_id": item.function_id,
        "step_id": item.step_id,
        "attempt": item.attempt,
        "available_at": item.available_at,
        "score": item.score,
        "lane": item.lane,
        "payload": json_text.dumps(item.payload),
        "dedupe": item.dedupe,
        "created_at": item.available_at,
    }


def _touch_lane(conn: Connection, item: NewItem) -> None:
    values = {
        "lane": item.lane,
        "next_at": item.available_at,
        "head_score": item.score,
        "limits": _limits_json(item.limits),
        "function_id": None if item.lane == TIMER_LANE else item.function_id,
    }
    _TOUCH_LANE[conn.dialect.name].run(conn, values)


_NO_LIMITS = "[]"
_NO_PAYLOAD = "{}"


def _limits_json(limits: tuple[Limit, ...]) -> str:
    return json_text.dumps([list(pair) for pair in limits]) if limits else _NO_LIMITS


CLAIM_PASSES = 3  # looks at the due lanes per claim, while the lanes looked at fell short
# A claim stops taking rate-charged starts (a rolling window, a throttle) once this long has
# passed since it began. Their authorizations are dated when the claim began, and their runs
# start only at its commit: in a long claim (64 starts on a loaded PostgreSQL took up to 1.5 s)
# the first would be dated long before their runs start, and the next window's starts would
# follow right behind them. (Every start of a claim is judged at that one time: a start judged
# later than the claim read what is due could take the turn of one that fell due meanwhile.)
CHARGE_SPAN_MS = 50


@dataclass
class _Span:
    """When a claim began, and whether its rate-charged starts have taken CHARGE_SPAN_MS (never,
    without a clock: simulations and tests that pin the time)."""

    began: int
    clock: Callable[[], int] | None = None
    spent: bool = False

    def charged(self) -> None:
        """A rate-charged start was decided: past the span, the claim takes no more."""
        if self.clock is not None:
            self.spent = self.clock() - self.began >= CHARGE_SPAN_MS


class Room(Protocol):
    """How many items of each function one claim may still take (a caller's own cap, such as
    the scheduler's calls per app, which the store does not know)."""

    def left(self, function_id: str | None) -> int:
        """Items of the function's lane the claim may still take (`function_id` None: the
        timers' lane)."""
        ...

    def took(self, function_id: str | None, count: int) -> None:
        """The claim took `count` items of the function."""
        ...


def claim(
    conn: Connection,
    now: int,
    max_items: int,
    lease_ms: int,
    skip: Collection[str] = (),
    clock: Callable[[], int] | None = None,
    room: Room | None = None,
) -> list[Claimed]:
    """Lease up to `max_items` due items, honouring every lane's concurrency limits; the lanes
    of the functions in `skip` (of apps this process calls as much as it may) are passed over,
    and of each other function no more than `room` leaves.

    A lane due by its row may give nothing: emptied or woken lanes are set right only when a
    claim looks at them (`finish`). When the lanes looked at fell short, the claim looks
    further (at most CLAIM_PASSES times), so that such lanes ahead of real work do not send
    a claim of one item (the next call taken where an answer is applied, an event's first
    call) away empty-handed. `clock` times its rate-charged starts (`CHARGE_SPAN_MS`)."""
    claimed: list[Claimed] = []
    seen: set[str] = set()
    span = _Span(now, clock)
    for _ in range(CLAIM_PASSES):
        wanted = max_items - len(claimed)
        if wanted <= 0:
            break
        asked = wanted + len(seen)  # the lanes already looked at may still be due
        rows = due_lanes(conn, now, asked, skip)
        fresh = [row for row in rows if row.lane not in seen]
        for lane_row in fresh:
            budget = max_items - len(claimed)
            if budget <= 0 or span.spent:
                break
            seen.add(lane_row.lane)
            if room is not None:
                budget = min(budget, room.left(lane_row.function_id))
                if budget <= 0:
                    continue  # its function's share of this claim is taken
            got = _claim_lane(conn, lane_row.lane, _limits(lane_row), span, budget, lease_ms)
            if room is not None and got:
                room.took(lane_row.function_id, len(got))
            claimed.extend(got)
        if len(rows) < asked or not fresh or span.spent:
            break  # every due lane has been looked at, or the charged starts took their time
    return claimed


def _limits(lane_row: Any) -> tuple[Limit, ...]:
    if lane_row.limits == _NO_LIMITS:
        return ()
    return limits_from_json(json_text.loads(lane_row.limits))


@record
class _Room:
    items: int  # how many items of the lane may take a slot of every key now
    tightest: str | None  # the key that allows no more than that (None: the budget did)
    tightest_empty: bool = False  # that key had no live slot: filled, all its slots are ours


def _claim_lane(
    conn: Connection, lane: str, limits: tuple[Limit, ...], span: _Span, budget: int, lease: int
) -> list[Claimed]:
    now = span.began
    room = _room(conn, lane, limits, now, budget)
    items = _due_items(conn, lane, now, room.items) if room.items > 0 else []
    claimed: list[Claimed] = []
    for row in items:
        payload = json_text.loads(row.payload)
        throttled = start_throttle.window(payload)  # the throttle's period window
        verdict = rolling_windows.check(conn, row, payload, now, start_throttle.check, throttled)
        if verdict.start:
            claimed.append(_lease(conn, row, payload, limits, now, lease))
        elif verdict.defer_to is None:
            break  # another process is deciding this throttle key: leave the rest for now
        if rolling_windows.charges(payload, throttled):
            span.charged()
            if span.spent:
                break  # the rest start in a later claim, dated by its own time
    if room.items <= 0:
        return claimed
    # A claim that filled a key parks the lane at once, rather than finding the key full on its
    # next look; otherwise leased items (and deferred starts) moved the head later.
    filled = room.tightest if len(claimed) == room.items else None
    if claimed and filled is None:
        _MOVE_HEAD.run(conn, {"b_lane": lane})
        return claimed
    # a key filled by this claim alone: its earliest slot ends when these leases do
    ends = now + lease if filled is not None and room.tightest_empty else None
    if claimed and filled is not None:  # the lane keeps items (these at least): one statement
        until = ends if ends is not None else _slot_end(conn, filled, now)
        _PARK_AT_HEAD.run(conn, {"b_lane": lane, "b_key": filled, "b_until": until})
        return claimed
    _refresh_lane(conn, lane, park_on=filled, now=now, slot_end=ends)  # set, parked, or removed
    return claimed


def _room(conn: Connection, lane: str, limits: tuple[Limit, ...], now: int, budget: int) -> _Room:
    """Every key's slots are counted under its lock, keys in one fixed order (by hash), so
    claimers needing overlapping keys never wait for each other in a cycle; a slot of every
    key is taken in the same transaction, or none."""
    room, tightest, empty = budget, None, False
    for limit in sorted(limits):
        if limit.unlimited:
            continue
        if not dialect.try_lock(conn, dialect.SLOT_KEY, limit.key):
            return _Room(0, None)  # another process is counting this key: look again soon
        size, used = size_and_use(conn, limit, now)
        if size <= 0:
            continue
        free = size - used
        if free <= 0:
            _park(conn, lane, limit.key, now)
            return _Room(0, None)
        if free <= room:  # claiming `room` items fills this key
            room, tightest, empty = free, limit.key, used == 0
    return _Room(room, tightest, empty)


def in_use(conn: Connection, key: str, now: int) -> int:
    """The key's slots taken now."""
    return size_and_use(conn, Limit(key, 0), now)[1]


def size_and_use(
    conn: Connection, limit: Limit, now: int, other_than: int | None = None
) -> tuple[int, int]:
    """The key's size (its stored capacity, if any, holds over the declared limit) and its
    slots taken (but those of item `other_than`): one statement for both."""
    params: dict[str, Any] = {"b_key": limit.key, "b_now": now, "b_id": other_than or 0}
    if not limit.capacity:
        return limit.limit, int(_IN_USE_BY_OTHERS.scalar(conn, params))
    row = _SIZE_AND_USE.first(conn, {**params, "b_cap": limit.capacity})  # always one row
    return (limit.limit if row.stored is None else int(row.stored)), int(row.used)


_PARKED_ON = select(lanes.c.blocked_on).where(lanes.c.lane == _p("lane"))


def parked_on(conn: Connection, lane: str) -> str | None:
    """The key a lane waits for a slot of, if it is parked."""
    found = conn.execute(_PARKED_ON, {"b_lane": lane}).scalar()
    return None if found is None else str(found)


def _park(conn: Connection, lane: str, key: str, now: int) -> None:
    _PARK_LANE.run(conn, {"b_lane": lane, "blocked_on": key, "next_at": _slot_end(conn, key, now)})


def _slot_end(conn: Connection, key: str, now: int) -> int:
    """The safety net of a parked lane: look again when the key's earliest slot would expire."""
    expiry = _EARLIEST_SLOT_END.scalar(conn, {"b_key": key, "b_now": now})
    return int(expiry) if expiry is not None else now


def _due_items(conn: Connection, lane: str, now: int, limit: int) -> list[Any]:
    params: dict[str, Any] = {"b_lane": lane, "b_now": now, "b_limit": limit}
    if dialect.is_postgres(conn):
        return _DUE_ITEMS.all(conn, params)
    found = _DUE_ITEMS_WALK.all(conn, {**params, "b_window": ITEMS_WINDOW})
    if len(found) >= limit:
        return found
    if _LANE_ITEMS_PAST.first(conn, {"b_lane": lane, "b_window": ITEMS_WINDOW}) is None:
        return found  # the window held every item of the lane
    return _DUE_ITEMS_SORT.all(conn, params)


def _lease(
    conn: Connection,
    row: Any,
    payload: dict[str, Any],
    limits: tuple[Limit, ...],
    now: int,
    lease: int,
    slots_of: int | None = None,
) -> Claimed:
    """Lease the item and take a slot of each of its lane's keys (those of `slots_of`, a
    finished item, when given), and a new fence of each key with limit 1."""
    token = _new_token()
    until = now + lease
    _LEASE.run(conn, {"b_id": row.id, "b_until": until, "b_token": token, "b_now": now})
    keys = tuple(limit.key for limit in limits)
    for key in keys:
        _take_slot(conn, key, row.id, until, slots_of)
    single = [limit.key for limit in limits if limit.limit == 1]  # each claim: a new fence
    return Claimed(
        id=row.id,
        kind=row.kind,
        run_id=row.run_id,
        function_id=row.function_id,
        step_id=row.step_id,
        attempt=row.attempt,
        payload=payload,
        lane=row.lane,
        token=token,
        keys=keys,
        claimed_at=now,
        fences=fences.take(conn, single) if single else {},
        series=row.series,
        limits=limits,
    )


def _take_slot(conn: Connection, key: str, item_id: int, until: int, slots_of: int | None) -> None:
    if slots_of is not None:  # the finished item's row becomes the new holder's
        params = {"b_key": key, "b_old": slots_of, "b_new": item_id, "b_until": until}
        if _MOVE_SLOT.rowcount(conn, params) == 1:
            return
        _DELETE_SLOT.run(conn, {"b_key": key, "b_id": slots_of})
    take = _TAKE_SLOT[conn.dialect.name]
    take.run(conn, {"key_hash": key, "item_id": item_id, "expires_at": until})


def _refresh_lane(
    conn: Connection,
    lane: str,
    park_on: str | None = None,
    now: int = 0,
    slot_end: int | None = None,
) -> None:
    """Set the lane's head from its items, parked on `park_on` if given (until `slot_end`, when
    the caller knows when that key's earliest slot ends); removed if it has none."""
    if dialect.is_postgres(conn):
        # Lock the lane first: an enqueue into it waits, or sees it deleted and creates it anew
        # (SQLite's single writer already serializes them).
        _LANE_LOCKED.first(conn, {"b_lane": lane})
    head = _LANE_HEAD.first(conn, {"b_lane": lane})
    if head is None:
        _DELETE_LANE.run(conn, {"b_lane": lane})
        return
    values = {
        "b_lane": lane,
        "next_at": head.available_at,
        "head_score": head.score,
        "blocked_on": park_on,
    }
    if park_on is not None:
        values["next_at"] = slot_end if slot_end is not None else _slot_end(conn, park_on, now)
    _UPDATE_LANE_HEAD.run(conn, values)


def _drop_if_empty(conn: Connection, lane: str) -> None:
    if _own_head(conn, lane) is None:
        _DELETE_LANE.run(conn, {"b_lane": lane})


def _own_head(conn: Connection, lane: str) -> Any:
    """The lane's earliest item (due time, score), or None if it has none; on PostgreSQL the
    lane is locked first, as in `_refresh_lane`, so an enqueue into it waits."""
    if dialect.is_postgres(conn):
        _LANE_LOCKED.first(conn, {"b_lane": lane})
    return _LANE_HEAD.first(conn, {"b_lane": lane})


class LeaseLost(Exception):
    """The item's lease was taken over (or the item removed): its outcome must not commit."""


def finish(conn: Connection, item: Claimed, now: int, *, keep_slots: bool = False) -> None:
    """Remove a claimed item and free its slots; raises LeaseLost if it is no longer ours.
    `keep_slots`: the caller passes them on with `hand_on` in this transaction instead.

    The lane is left as it is: its `next_at` was at most this item's lease end, and removing
    an item can only move the true head later, so the lane is never looked at too late. An
    emptied lane without keys is deleted by the claim that next finds it empty (one look),
    rather than by two more statements on every finished item; one with keys, here (it
    would otherwise be woken, only to be looked at and found empty)."""
    if _FINISH.rowcount(conn, {"b_id": item.id, "b_token": item.token}) != 1:
        raise LeaseLost(f"queue item {item.id} is no longer held by this claim")
    if not keep_slots:
        release_slots(conn, item.id, item.keys, now, own_lane=item.lane)
    elif item.keys and dialect.is_postgres(conn):
        # The locks `hand_on` takes, taken now in the order every release takes them (keys,
        # then the lane): the transition may lock the lane meanwhile (queuing the run's next
        # call), and the keys after it would be the reverse order of another process's release.
        _lock_keys(conn, item.keys)
        _LANE_LOCKED.first(conn, {"b_lane": item.lane})


def release_slots(
    conn: Connection, item_id: int, keys: tuple[str, ...], now: int, own_lane: str | None = None
) -> None:
    """Free the item's slots and wake the lanes parked on them. `own_lane`: the finished
    item's lane, deleted here if that emptied it (a keyed lane is parked on the key its last
    item filled: waking it would only cost a claim's look to find it empty)."""
    if not keys:
        return
    _lock_keys(conn, keys)  # a claimer counting the key finishes first, parking included
    empty = own_lane is not None and _own_head(conn, own_lane) is None
    _free_slots(conn, item_id, keys, now, own_lane if empty else None)


def _lock_keys(conn: Connection, keys: tuple[str, ...]) -> None:
    for key in sorted(keys):
        dialect.lock(conn, dialect.SLOT_KEY, key)


def _free_slots(
    conn: Connection, item_id: int, keys: tuple[str, ...], now: int, drop: str | None
) -> None:
    """Delete the item's slots (its keys locked), the lane `drop` (found empty), and wake the
    lanes parked on the keys."""
    for key in keys:  # by (key, item), the primary key: by item alone scans every slot
        _DELETE_SLOT.run(conn, {"b_key": key, "b_id": item_id})
    if drop is not None:
        _DELETE_LANE.run(conn, {"b_lane": drop})
    woken = 0
    for key in keys:  # wake the lanes parked on a key that now has room
        woken += _WAKE_PARKED.rowcount(conn, {"b_key": key, "b_now": now})
    if woken:
        dialect.notify(conn, dialect.WAKE)


def hand_on(conn: Connection, item: Claimed, now: int, lease_ms: int) -> Claimed | None:
    """Pass the slots of `item`, finished with `keep_slots`, straight to the next due item of
    its lane, leased to the caller; or free them as `finish` would, and return None.

    A hot key's next run thus starts in the transaction that ends the last one, with no wake,
    claim and re-park of its lane in between. The slots go on only when the claim would have
    chosen that item too: no due work elsewhere is as old, no other lane is parked on one of
    the keys (the claim's order decides which waiting lane goes next), the keys still have
    room (a capacity lowered meanwhile holds new holders back), and the item passes its start
    gates. The lane's row stays as it is: its head can only have
    moved later, and a parked lane stays parked, with its slots still full."""
    if not item.keys:
        return None
    _lock_keys(conn, item.keys)
    head = _own_head(conn, item.lane)
    if head is not None and head.available_at <= now:
        nxt = _next_holder(conn, item, now, lease_ms)
        if nxt is not None:
            return nxt
    _free_slots(conn, item.id, item.keys, now, item.lane if head is None else None)
    return None


def _next_holder(conn: Connection, item: Claimed, now: int, lease_ms: int) -> Claimed | None:
    rows = _due_items(conn, item.lane, now, 1)
    if not rows or due_before(conn, now, rows[0].score):
        return None  # nothing due, or older (or as old) work that the claim takes first
    for key in item.keys:
        if _OTHER_PARKED.first(conn, {"b_key": key, "b_lane": item.lane}) is not None:
            return None  # the claim decides, by score, which waiting lane goes first
    if not _room_kept(conn, item, now):
        return None
    row = rows[0]
    payload = json_text.loads(row.payload)
    throttled = start_throttle.window(payload)
    if not rolling_windows.check(conn, row, payload, now, start_throttle.check, throttled).start:
        return None
    return _lease(conn, row, payload, item.limits, now, lease_ms, slots_of=item.id)


def _room_kept(conn: Connection, item: Claimed, now: int) -> bool:
    """Whether every key still has room for the slot `item` holds: not if a capacity was
    lowered to what the other holders take (new holders wait; nobody's slot is revoked)."""
    for limit in item.limits:
        if limit.unlimited:
            continue
        size, used = size_and_use(conn, limit, now, other_than=item.id)
        if size > 0 and used >= size:
            return False
    return True


def retry(conn: Connection, item: Claimed, available_at: int, now: int) -> None:
    """Put a claimed item back for another attempt at `available_at`."""
    params = {
        "b_id": item.id,
        "b_token": item.token,
        "b_at": available_at,
        "b_attempt": item.attempt + 1,
    }
    if _RETRY.rowcount(conn, params) != 1:
        raise LeaseLost(f"queue item {item.id} is no longer held by this claim")
    release_slots(conn, item.id, item.keys, now)
    _refresh_lane(conn, item.lane)


def extend(conn: Connection, items: list[Claimed], until: int) -> None:
    """Keep the leases (and slots) of items still being worked on."""
    for item in items:
        _EXTEND_ITEM.run(conn, {"b_id": item.id, "b_token": item.token, "b_until": until})
        for key in item.keys:
            _EXTEND_SLOT.run(conn, {"b_key": key, "b_id": item.id, "b_until": until})


def remove_run_items(conn: Connection, run_id: str, keep: int | None, now: int) -> int | None:
    """Drop every queued item of a finished run (but the one finishing it); returns when the
    latest lease of its calls still in flight ends (None if none is), as `fifo.in_flight_until`
    would, from the same read (a laned run's end asks it next)."""
    # Items in flight stay: their holder finishes them (freeing their slots only when the call
    # really ends), sees the run has ended and moves it no further.
    # Their lanes stay as they are: removing items never makes a lane due too late (`finish`).
    latest: int | None = None
    for row in _RUN_ITEMS.all(conn, {"b_run": run_id}):
        if row.lease_owner is not None:
            if row.kind == QueueKind.EXEC:  # a leased item's lease ends at its available_at
                until = int(row.available_at)
                latest = until if latest is None else max(latest, until)
        elif row.id != keep:
            _DELETE_ITEM.run(conn, {"b_id": row.id})
    return latest


def remove_by_dedupe(conn: Connection, dedupe: str) -> None:
    row = conn.execute(_DEDUPE, {"b_dedupe": dedupe}).first()
    if row is not None:
        _DELETE_ITEM.run(conn, {"b_id": row.id})  # its lane stays, as in `finish`


def release_all_leases(conn: Connection, now: int) -> int:
    """At the start of a process that owns the store alone: nothing is in flight any more."""
    conn.execute(delete(slots))
    done = conn.execute(
        update(queue)
        .where(queue.c.lease_owner.is_not(None))
        .values(available_at=now, lease_owner=None)
    )
    conn.execute(update(lanes).values(next_at=now, blocked_on=None))
    return int(done.rowcount)


def hand_back(conn: Connection, items: list[Claimed], now: int) -> int:
    """A process shutting down returns the items it still holds: claimable at once by anyone,
    instead of after their leases run out. Items finished or taken over meanwhile are skipped."""
    returned = 0
    for item in items:
        params = {"b_id": item.id, "b_token": item.token, "b_now": now}
        if _HAND_BACK.rowcount(conn, params) == 1:
            returned += 1
            release_slots(conn, item.id, item.keys, now)
            _refresh_lane(conn, item.lane)
    return returned


def next_due(conn: Connection, skip: Collection[str] = ()) -> int | None:
    """When the first lane of no function in `skip` is due (None: there is none)."""
    if skip:
        value = conn.execute(_NEXT_DUE_QUERY.where(not_skipped(skip))).scalar()
    else:
        value = _NEXT_DUE.scalar(conn)
    return None if value is None else int(value)
