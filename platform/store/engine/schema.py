"""The schema, as SQLAlchemy Core tables. Alembic migrations build exactly this (tested).

Times are integer Unix milliseconds from the injected clock. JSON is kept as text: step memos
go back to the SDK byte for byte, and text compares the same on every backend.
"""

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    Sequence,
    String,
    Table,
    Text,
    text,
)

metadata = MetaData()

ID = String(32)  # ULID text (26 chars) or a short internal name
KEY = String(64)  # hex hash of a flow-control key

apps = Table(
    "apps",
    metadata,
    Column("id", ID, primary_key=True),
    Column("name", String(255), nullable=False, unique=True),
    Column("url", Text, nullable=False),
    Column("sdk", String(64), nullable=False, server_default=""),
    Column("framework", String(64), nullable=True),
    Column("checksum", String(64), nullable=False, server_default=""),
    Column("error", Text, nullable=True),
    Column("synced_at", BigInteger, nullable=True),
    Column("created_at", BigInteger, nullable=False),
)

functions = Table(
    "functions",
    metadata,
    Column("id", ID, primary_key=True),
    Column("app_id", ID, nullable=False, index=True),
    Column("slug", String(255), nullable=False, unique=True),
    Column("name", String(255), nullable=False),
    Column("config", Text, nullable=False),
    Column("version", Integer, nullable=False, server_default="1"),
    Column("archived", Boolean, nullable=False, server_default="0"),
    Column("created_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
)

# A function's paused state: a row per function ever paused, `mode` NULL once resumed (the
# row stays: its `changed_at` feeds the catalog version other processes reload on).
function_pauses = Table(
    "function_pauses",
    metadata,
    Column("function_id", ID, primary_key=True),
    Column("mode", String(16), nullable=True),  # skip | hold; NULL: not paused
    Column("in_progress", String(16), nullable=True),  # pause | cancel
    Column("paused_at", BigInteger, nullable=True),
    Column("paused_by", Text, nullable=True),
    Column("changed_at", BigInteger, nullable=False),
)

# Who paused or resumed which function, when and how: the audit of production mode.
function_pause_changes = Table(
    "function_pause_changes",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("function_id", ID, nullable=False),
    Column("action", String(16), nullable=False),  # paused, resumed, bound
    Column("mode", String(16), nullable=True),
    Column("in_progress", String(16), nullable=True),
    Column("actor", Text, nullable=False),
    Column("at", BigInteger, nullable=False),
    Column("runs", Integer, nullable=False, server_default="0"),  # runs it cancelled
    Index("ix_function_pause_changes_of", "function_id", "id"),
)

events = Table(
    "events",
    metadata,
    Column("id", ID, primary_key=True),  # internal ULID
    Column("name", String(512), nullable=False),
    Column("user_id", Text, nullable=True),  # the event's own `id`, if the sender set one
    Column("ts", BigInteger, nullable=False),
    Column("received_at", BigInteger, nullable=False),
    Column("payload", Text, nullable=False),  # the full event object as the SDK will see it
    Index("ix_events_name_received", "name", "received_at"),
    Index("ix_events_received", "received_at"),
    # Only events that carry an id of their own: most do not (every run's finished event),
    # and an index entry for each of them was one more page in the commit that stores it.
    Index(
        "ix_events_user_id",
        "user_id",
        sqlite_where=text("user_id IS NOT NULL"),
        postgresql_where=text("user_id IS NOT NULL"),
    ),
)

# What admission decided for each (event, function) pair that started no run of its own.
event_outcomes = Table(
    "event_outcomes",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("event_id", ID, nullable=False, index=True),
    Column("function_id", ID, nullable=False),
    Column("outcome", String(32), nullable=False),  # rate_limited, idempotent, debounced, ...
    Column("run_id", ID, nullable=True),
    Column("detail", Text, nullable=False, server_default=""),
    Column("at", BigInteger, nullable=False),
)

runs = Table(
    "runs",
    metadata,
    Column("id", ID, primary_key=True),
    Column("function_id", ID, nullable=False),
    Column("status", String(16), nullable=False),  # QUEUED RUNNING COMPLETED FAILED ...
    Column("event_ids", Text, nullable=False),  # JSON list, first = the triggering event
    Column("batch_id", ID, nullable=True),
    Column("cron", String(255), nullable=True),
    Column("original_run_id", ID, nullable=True),  # set on reruns
    Column("correlation_id", String(128), nullable=True),  # invoke: "<parent run>.<step>"
    Column("created_at", BigInteger, nullable=False),
    Column("started_at", BigInteger, nullable=True),
    Column("ended_at", BigInteger, nullable=True),
    Column("output", Text, nullable=True),  # JSON: return value, or the error object
    Column("score", BigInteger, nullable=False),  # created_at - priority, for queue order
    Column("lane", String(64), nullable=False),  # concurrency lane of every item of the run
    Column("keys", Text, nullable=False, server_default="{}"),  # JSON: evaluated gate keys
    Column("force_plan", Boolean, nullable=False, server_default="0"),
    Column("pending", Text, nullable=False, server_default="[]"),  # JSON: open parallel steps
    Column("step_count", Integer, nullable=False, server_default="0"),
    Column("state_bytes", BigInteger, nullable=False, server_default="0"),
    Column("cancel_requested", Boolean, nullable=False, server_default="0"),
    Column("waiting", Text, nullable=True),  # JSON WaitReason: why the run is not moving
    Column("warnings", Text, nullable=False, server_default="[]"),
    Index("ix_runs_function_created", "function_id", "created_at"),
    Index("ix_runs_status_created", "status", "created_at"),
    Index("ix_runs_created", "created_at"),
    # Partial (nearly every run has neither): an invoking parent finds its child, a run its
    # reruns; a full index of NULLs would be skipped by the planner, scanning every run.
    Index(
        "ix_runs_correlation",
        "correlation_id",
        sqlite_where=text("correlation_id IS NOT NULL"),
        postgresql_where=text("correlation_id IS NOT NULL"),
    ),
    Index(
        "ix_runs_original",
        "original_run_id",
        sqlite_where=text("original_run_id IS NOT NULL"),
        postgresql_where=text("original_run_id IS NOT NULL"),
    ),
)

# One memoized step result per (run, hashed step id): the exact JSON sent back to the SDK.
steps = Table(
    "steps",
    metadata,
    Column("run_id", ID, primary_key=True),
    Column("step_id", String(64), primary_key=True),
    Column("seq", Integer, nullable=False),
    Column("name", Text, nullable=False, server_default=""),
    Column("op", String(32), nullable=False),
    Column("memo", Text, nullable=False),
    Column("at", BigInteger, nullable=False),
)

# The run's timeline: every request made to the app, every sleep, wait and retry.
history = Table(
    "history",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", ID, nullable=False, index=True),
    Column("kind", String(32), nullable=False),  # call, sleep, wait, invoke, retry, ...
    Column("step_id", String(64), nullable=True),
    Column("name", Text, nullable=False, server_default=""),
    Column("attempt", Integer, nullable=False, server_default="0"),
    Column("status", String(16), nullable=False),
    Column("started_at", BigInteger, nullable=False),
    Column("ended_at", BigInteger, nullable=True),
    Column("detail", Text, nullable=False, server_default="{}"),
)

# The durable queue. Every piece of future work is a row: calls to apps, sleeps, timeouts,
# debounce and batch flushes, cron ticks. `lane` groups items that share concurrency keys.
queue = Table(
    "queue",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("kind", String(24), nullable=False),
    Column("run_id", ID, nullable=True),
    Column("function_id", ID, nullable=True),
    Column("step_id", String(64), nullable=False, server_default="step"),
    Column("attempt", Integer, nullable=False, server_default="0"),
    Column("available_at", BigInteger, nullable=False),
    Column("score", BigInteger, nullable=False),
    Column("lane", String(64), nullable=False),
    Column("lease_until", BigInteger, nullable=False, server_default="0"),
    Column("lease_owner", String(64), nullable=True),
    Column("payload", Text, nullable=False, server_default="{}"),
    Column("dedupe", String(255), nullable=True),
    Column("created_at", BigInteger, nullable=False),
    Column("claimed_at", BigInteger, nullable=True),  # the last claim: since when it executes
    # Calls the row carried before its current one: a run's next call may take the row of the
    # call before it (`queue.enqueue_in_place`), so a job id is the row's id and this number.
    Column("series", Integer, nullable=False, server_default="0"),
    Index("ix_queue_lane_order", "lane", "score", "id"),
    Index("ix_queue_lane_due", "lane", "available_at"),
    Index("ix_queue_run", "run_id"),
    # Unique among the items that have one; most have none, and an index holding their NULLs
    # was one more page written by every claim and every end of an item.
    Index(
        "ux_queue_dedupe",
        "dedupe",
        unique=True,
        sqlite_where=text("dedupe IS NOT NULL"),
        postgresql_where=text("dedupe IS NOT NULL"),
    ),
)

# A lane is claimable from `next_at`; a lane whose head waits for a full key is parked on
# that key (`blocked_on`) until a slot frees, so the claimer never scans or bounces it.
lanes = Table(
    "lanes",
    metadata,
    Column("lane", String(64), primary_key=True),
    Column("next_at", BigInteger, nullable=False),
    Column("head_score", BigInteger, nullable=False),
    Column("blocked_on", KEY, nullable=True),
    Column("limits", Text, nullable=False, server_default="[]"),  # JSON [[key_hash, limit]]
    # The function whose items the lane holds (a lane's name includes it); NULL for the timers'
    # lane, whose items are of every function. A claim passes over the lanes of apps called
    # as much as they may be by this column, not by the lanes it knows to be in flight.
    Column("function_id", ID, nullable=True),
    Index("ix_lanes_next", "next_at", "head_score"),
    Index("ix_lanes_score", "head_score", "next_at", "lane"),  # a claim's walk (due_lanes.py)
    # only parked lanes: a claim that leaves a lane unparked writes no page of it
    Index(
        "ix_lanes_blocked_on",
        "blocked_on",
        sqlite_where=text("blocked_on IS NOT NULL"),
        postgresql_where=text("blocked_on IS NOT NULL"),
    ),
    sqlite_with_rowid=False,  # stored by name: one b-tree less to write per new or ended lane
)

# One row per executing item per concurrency key; expired rows no longer count.
slots = Table(
    "slots",
    metadata,
    Column("key_hash", KEY, primary_key=True),
    Column("item_id", Integer, primary_key=True),
    Column("expires_at", BigInteger, nullable=False),
    sqlite_with_rowid=False,  # a slot taken or freed writes one b-tree, not a table and its key
)

# FIFO lanes (the `lane` option): one run of a lane at a time, in admission order. A row per
# busy lane (taken away when its last run leaves): `holder` is the run that has the lane,
# `fence` its token (higher with each new holder, across the lane's busy spells:
# store/flow/fifo_lanes.py),
# `next_seq` numbers the runs queued behind, under the row's lock.
fifo_lanes = Table(
    "fifo_lanes",
    metadata,
    Column("lane", KEY, primary_key=True),
    Column("key", Text, nullable=False, server_default=""),  # the readable key value
    Column("holder", ID, nullable=True),
    Column("fence", BigInteger, nullable=False, server_default="0"),
    Column("next_seq", BigInteger, nullable=False, server_default="0"),
    # Read by the lane view (store/views/fifo_lanes.py), kept by the joins and leaves: whose lanes
    # ("fn:<function id>" or "name:<lane name>"), since when the holder has the lane, and how
    # many runs are in line (a counter: a long line is never counted row by row).
    Column("scope", Text, nullable=False, server_default=""),
    Column("held_since", BigInteger, nullable=True),
    Column("queued", BigInteger, nullable=False, server_default="0"),
    # Busy lanes only (every lane since 0018; a lane with runs in line always has a holder).
    Index(
        "ix_fifo_lanes_busy",
        "scope",
        "lane",
        sqlite_where=text("holder IS NOT NULL"),
        postgresql_where=text("holder IS NOT NULL"),
    ),
    sqlite_with_rowid=False,  # stored by its key, as lanes
)

# PostgreSQL's source of lane fences (store/flow/fifo_lanes.py; SQLite keeps a `fences` row
# instead).
# A cache of 1 (the default, said here so no one raises it): each draw then goes to the
# sequence itself, so numbers follow the order in which holders took their lanes.
FIFO_FENCES = Sequence("fifo_lane_fences", cache=1, metadata=metadata)

# The runs queued behind a lane's holder, in admission order; they have no queue item yet, so
# the claimer never sees them. `start_at` and `payload` are those of their first call.
fifo_members = Table(
    "fifo_members",
    metadata,
    Column("lane", KEY, primary_key=True),
    Column("seq", BigInteger, primary_key=True),
    Column("run_id", ID, nullable=False, index=True),
    Column("start_at", BigInteger, nullable=False),
    Column("payload", Text, nullable=False, server_default="{}"),
    sqlite_with_rowid=False,  # stored by its key, as fifo_lanes
)

# Fencing counters of concurrency keys with limit 1: each claim of a call under such a key is a
# new holder and takes the next number. Never deleted, so a token never repeats. On SQLite the
# row `fifo-lanes` is the FIFO lanes' counter (store/flow/fifo_lanes.py).
fences = Table(
    "fences",
    metadata,
    Column("scope", KEY, primary_key=True),
    Column("value", BigInteger, nullable=False),
    sqlite_with_rowid=False,  # as slots
)

# Gate state: GCRA meters, idempotency records, debounce windows, batches, singleton locks.
gate_state = Table(
    "gate_state",
    metadata,
    Column("gate", String(16), primary_key=True),
    Column("key_hash", KEY, primary_key=True),
    Column("state", Text, nullable=False),
    Column("expires_at", BigInteger, nullable=True),
)

# Strict rolling windows (store/flow/rolling_windows.py): per scope, a header (the gate's Ledger)
# and the log of its authorizations by number, pruned once they leave the window.
rolling_scopes = Table(
    "rolling_scopes",
    metadata,
    Column("scope_hash", KEY, primary_key=True),
    Column("count", BigInteger, nullable=False),
    Column("last_at", BigInteger, nullable=False),
    Column("line_end", BigInteger, nullable=False),
    Column("line_score", BigInteger, nullable=False),
    Column("line_id", BigInteger, nullable=False),
    Column("expires_at", BigInteger, nullable=False, index=True),  # last_at + window
)
rolling_log = Table(
    "rolling_log",
    metadata,
    Column("scope_hash", KEY, primary_key=True),
    Column("seq", BigInteger, primary_key=True),
    Column("at_ms", BigInteger, nullable=False),
    Index("ix_rolling_log_at", "scope_hash", "at_ms"),
)

# Open waits: wait_for_event pauses, invoke results and cancel-on subscriptions.
waits = Table(
    "waits",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("kind", String(16), nullable=False),  # wait, cancel, invoke
    Column("run_id", ID, nullable=False, index=True),
    Column("step_id", String(64), nullable=True),
    Column("event_name", String(512), nullable=False),
    Column("expression", Text, nullable=True),
    Column("correlation_id", String(128), nullable=True, index=True),
    Column("created_at", BigInteger, nullable=False),
    Column("expires_at", BigInteger, nullable=False),
    # matching an event reads waits and cancel-on subscriptions of its name, not invokes
    Index("ix_waits_event", "event_name", "kind", "created_at"),
    # a signal is held by one waiting run at most: a second waiter loses the insert's race
    Index(
        "ux_waits_signal",
        "event_name",
        unique=True,
        sqlite_where=text("kind = 'signal'"),
        postgresql_where=text("kind = 'signal'"),
    ),
)

# Signals delivered (POST /v1/signals), kept for the sender to read the run's answer: the
# reply a step.reply recorded, in the transaction that saved that step.
signal_deliveries = Table(
    "signal_deliveries",
    metadata,
    Column("id", ID, primary_key=True),
    Column("signal", String(512), nullable=False),
    Column("run_id", ID, nullable=False, index=True),
    Column("step_id", String(64), nullable=False),
    Column("delivered_at", BigInteger, nullable=False),
    Column("answer", Text, nullable=True),  # JSON text of the reply's data
    Column("answered_at", BigInteger, nullable=True),
)

event_runs = Table(
    "event_runs",
    metadata,
    Column("event_id", ID, primary_key=True),
    Column("run_id", ID, primary_key=True),
    sqlite_with_rowid=False,  # the key is the row: one b-tree written per run an event starts
)

# Run idempotency by event id: one run per function per event id within 24 h.
run_keys = Table(
    "run_keys",
    metadata,
    Column("function_id", ID, primary_key=True),
    Column("key", String(128), primary_key=True),
    Column("run_id", ID, nullable=False),
    Column("expires_at", BigInteger, nullable=False),
    sqlite_with_rowid=False,  # one b-tree written per run started, not a table and its key
)

# Live capacities: the size of a limit as operators set it, created from the value code first
# declared and never overwritten from code afterwards (`declared` follows the code, so the
# difference is drift). `kind` says what is limited: a concurrency scope now, a rate meter too.
capacities = Table(
    "capacities",
    metadata,
    Column("kind", String(16), primary_key=True),
    Column("id", KEY, primary_key=True),  # hash of the scope's identity (lanes name it)
    Column("name", Text, nullable=False),  # readable and unique per kind: how people address it
    Column("declared", BigInteger, nullable=False),  # what the code declares now
    Column("capacity", BigInteger, nullable=False),  # what the claim uses
    Column("revision", Integer, nullable=False),  # bumped by every change: optimistic writes
    Column("created_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
    Column("updated_by", Text, nullable=True),  # who changed `capacity` last (None: the code)
    Index("ix_capacities_name", "kind", "name"),
)

# Who changed a capacity, when, from what to what.
capacity_changes = Table(
    "capacity_changes",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("kind", String(16), nullable=False),
    Column("capacity_id", KEY, nullable=False),
    Column("action", String(16), nullable=False),  # created, declared, set, reset
    Column("old", BigInteger, nullable=True),
    Column("new", BigInteger, nullable=False),
    Column("revision", Integer, nullable=False),
    Column("actor", Text, nullable=False),
    Column("at", BigInteger, nullable=False),
    Index("ix_capacity_changes_of", "kind", "capacity_id", "id"),
)

# Webhook sources (platform/webhooks/): `id` is the unguessable part of the URL
# /webhooks/{id}; `config` the source as JSON (scheme, secrets, transform, limits), checked by
# the webhooks room before it is written.
webhook_sources = Table(
    "webhook_sources",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("name", String(255), nullable=False, unique=True),
    Column("config", Text, nullable=False),
    Column("revision", Integer, nullable=False),
    Column("created_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
)

# Every delivery a source received: accepted (with its event) or refused (with the reason).
# A delivery whose signature held keeps its body, headers and query, so that it can be
# replayed once the transform is fixed; a forged or oversized one keeps none of them.
webhook_deliveries = Table(
    "webhook_deliveries",
    metadata,
    Column("id", ID, primary_key=True),  # ULID: by time of receipt
    Column("source_id", String(64), nullable=False),
    Column("received_at", BigInteger, nullable=False),
    Column("status", String(16), nullable=False),  # accepted, refused, replayed
    Column("reason", String(32), nullable=True),  # why refused
    Column("message", Text, nullable=True),
    Column("event_id", ID, nullable=True),
    Column("body", LargeBinary, nullable=True),
    Column("headers", Text, nullable=True),  # JSON object, lower-case names
    Column("query", Text, nullable=True),  # JSON object
    Index("ix_webhook_deliveries_source", "source_id", "id"),
)
