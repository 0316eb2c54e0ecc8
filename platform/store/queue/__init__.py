"""The durable queue: enqueue, claim under concurrency limits, finish, lease upkeep.

A run's first call may carry a throttle and rolling windows: the claim checks them on the start
itself, in the same transaction (`rolling_windows`, then `start_throttle`), and defers a start
that would come too soon.

Every item sits in a partition: all items of runs that carry the same concurrency keys (its
row is in the `lanes` table, and code here calls it a lane: names older than FIFO lanes). A
partition is looked at from `lanes.next_at`; when its head needs a slot of a full key, it is
parked on that key (`blocked_on`) and the claimer never reads its items again until a slot of
that key is released. So a hot key with thousands of queued runs costs other keys nothing.

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
read with the key's count under its lock)."""

from weir.platform.store.queue.claiming import CHARGE_SPAN_MS, CLAIM_PASSES, Room, claim
from weir.platform.store.queue.enqueueing import enqueue, enqueue_claimed, enqueue_in_place
from weir.platform.store.queue.finishing import finish
from weir.platform.store.queue.handing_on import hand_on
from weir.platform.store.queue.items import (
    TIMER_LANE,
    Claimed,
    LeaseLost,
    NewItem,
    SlotLimit,
    limits_from_json,
)
from weir.platform.store.queue.leasing import ITEMS_WINDOW
from weir.platform.store.queue.partition_rows import next_due, parked_on
from weir.platform.store.queue.removal import in_flight_until, remove_by_dedupe, remove_run_items
from weir.platform.store.queue.slot_rows import in_use, release_slots, size_and_use
from weir.platform.store.queue.upkeep import extend, hand_back, release_all_leases, retry

__all__ = [
    "CHARGE_SPAN_MS",
    "CLAIM_PASSES",
    "ITEMS_WINDOW",
    "TIMER_LANE",
    "Claimed",
    "LeaseLost",
    "NewItem",
    "Room",
    "SlotLimit",
    "claim",
    "enqueue",
    "enqueue_claimed",
    "enqueue_in_place",
    "extend",
    "finish",
    "hand_back",
    "hand_on",
    "in_flight_until",
    "in_use",
    "limits_from_json",
    "next_due",
    "parked_on",
    "release_all_leases",
    "release_slots",
    "remove_by_dedupe",
    "remove_run_items",
    "retry",
    "size_and_use",
]
