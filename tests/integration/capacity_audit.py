"""The capacity certification's audits: FIFO lanes and rolling-window meters, from the store's
own ledger (and, for lanes, the app's fsync'd journal beside it).

- Lanes: every laned event ended in a completed run; per lane, the fencing tokens the runs were
  given go up in the order the events were sent; no run of a lane started before the one
  before it had ended (the store's start and end times), and no two runs' step bodies ran at
  once (the app's journal); nothing is left holding or queued in `fifo_lanes`/`fifo_members`.
- Meters: every authorization a meter gave is a row of `rolling_log` (its number and time),
  copied as it is inserted (`LedgerCopy`); the audit checks that no window of the meter's
  length ever held more than its limit, and that there is at least one authorization per
  started run.
"""

import json
from collections import defaultdict
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from sqlalchemy import create_engine, text

from tests.integration.apps import weir_capacity as fns
from tests.integration.certification_audit import Load, open_work
from tests.integration.harness import AppServer, store_rows

LANED = "cap/laned"


class LedgerCopy:
    """Every rolling-window authorization the store commits, copied by the database itself.

    A trigger on `rolling_log` inserts each new row into a table of the audit's own, in the
    same transaction: an authorization rolled back is not copied, one committed always is,
    however soon a later charge prunes it from the log. (A watcher polling the log missed
    authorizations whose claim committed late in their window: pruned before its next look.)
    """

    TABLE = "cert_rolling_copy"

    def __init__(self, url: str) -> None:
        self.url = url

    def install(self) -> None:
        engine = create_engine(self.url)
        try:
            with engine.begin() as conn:
                for statement in _copy_ddl(conn.dialect.name):
                    conn.execute(text(statement))
        finally:
            engine.dispose()

    def entries(self) -> set[tuple[str, int, int]]:
        """Scope hash, number and time of every authorization given since `install`."""
        rows = store_rows(self.url, f"SELECT scope_hash, seq, at_ms FROM {self.TABLE}")
        return {(str(h), int(n), int(at)) for h, n, at in rows}


def _copy_ddl(dialect: str) -> list[str]:
    table = LedgerCopy.TABLE
    columns = "scope_hash TEXT NOT NULL, seq BIGINT NOT NULL, at_ms BIGINT NOT NULL"
    create = f"CREATE TABLE {table} ({columns})"
    copy = f"INSERT INTO {table} VALUES (NEW.scope_hash, NEW.seq, NEW.at_ms)"
    if dialect == "sqlite":
        trigger = f"CREATE TRIGGER {table} AFTER INSERT ON rolling_log BEGIN {copy}; END"
        return [create, trigger]
    function = (
        f"CREATE FUNCTION {table}() RETURNS trigger LANGUAGE plpgsql AS "
        f"$$ BEGIN {copy}; RETURN NEW; END $$"
    )
    trigger = (
        f"CREATE TRIGGER {table} AFTER INSERT ON rolling_log "
        f"FOR EACH ROW EXECUTE FUNCTION {table}()"
    )
    return [create, function, trigger]


@dataclass
class CapacityFigures:
    backend: str
    seconds: float
    kills: int
    accepted: int
    refused: int
    lanes: int
    laned_runs: int
    lane_lost: int
    lane_out_of_order: int
    lane_overlaps_store: int
    lane_overlaps_app: int
    lane_left: int
    stuck: int
    meters: dict[str, dict[str, int]] = field(default_factory=dict)

    def breaches(self) -> list[str]:
        rules = {
            "laned events without a completed run": self.lane_lost,
            "lane runs out of order": self.lane_out_of_order,
            "lane runs started before the previous ended (store)": self.lane_overlaps_store,
            "lane runs whose steps overlapped (app journal)": self.lane_overlaps_app,
            "lanes left held or queued": self.lane_left,
            "stuck runs or queue items": self.stuck,
        }
        for name, m in self.meters.items():
            rules[f"meter {name}: authorizations over the limit in a window"] = m["excess"]
            rules[f"meter {name}: started runs missing from the ledger"] = m["unledgered"]
        return [f"{name}: {count}" for name, count in rules.items() if count]

    def table(self) -> str:
        rows = [
            ("load", f"{self.seconds:.0f} s, {self.kills} SIGKILLs", ""),
            ("events accepted / requests refused", f"{self.accepted} / {self.refused}", ""),
            ("stuck after drain (runs + queue items)", str(self.stuck), _ok(not self.stuck)),
            ("lanes / laned runs", f"{self.lanes} / {self.laned_runs}", ""),
            ("laned events without a completed run", str(self.lane_lost), _ok(not self.lane_lost)),
            (
                "lane runs out of send order (by fence)",
                str(self.lane_out_of_order),
                _ok(not self.lane_out_of_order),
            ),
            (
                "lane runs overlapping: store / app journal",
                f"{self.lane_overlaps_store} / {self.lane_overlaps_app}",
                _ok(not self.lane_overlaps_store and not self.lane_overlaps_app),
            ),
            ("lanes left held or with runs in line", str(self.lane_left), _ok(not self.lane_left)),
        ]
        for name, m in self.meters.items():
            rows.append(
                (
                    f"meter {name} ({m['limit']}/s): runs, authorizations, most in any 1 s",
                    f"{m['runs']}, {m['authorizations']}, {m['peak']}",
                    _ok(not m["excess"] and not m["unledgered"]),
                )
            )
        head = f"| {self.backend} | figure | verdict |\n|---|---|---|\n"
        return head + "\n".join(f"| {a} | {b} | {c} |" for a, b, c in rows)


def _ok(good: bool) -> str:
    return "ok" if good else "**BROKEN**"


def audit_capacity(
    url: str,
    app: AppServer,
    load: Load,
    ledger: set[tuple[str, int, int]],
    backend: str,
    seconds: float,
) -> CapacityFigures:
    runs = _runs(url)
    lanes = _lane_figures(url, app, load, runs)
    return CapacityFigures(
        backend=backend,
        seconds=seconds,
        kills=load.kills,
        accepted=len(load.accepted),
        refused=load.refused,
        stuck=open_work(url),
        meters=_meter_figures(runs, ledger),
        **lanes,
    )


@dataclass(frozen=True)
class _Run:
    id: str
    fn: str
    status: str
    started_at: int | None
    ended_at: int | None
    keys: dict[str, Any]
    event_id: str


def _runs(url: str) -> list[_Run]:
    rows = store_rows(
        url,
        "SELECT r.id, f.slug, r.status, r.started_at, r.ended_at, r.keys, r.event_ids "
        "FROM runs r JOIN functions f ON f.id = r.function_id",
    )
    return [
        _Run(
            r[0],
            str(r[1]).split("-", 1)[1],
            r[2],
            r[3],
            r[4],
            json.loads(r[5]),
            json.loads(r[6])[0],
        )
        for r in rows
    ]


def _lane_figures(url: str, app: AppServer, load: Load, runs: list[_Run]) -> dict[str, int]:
    sent = _sent_lanes(url, load)
    laned = [r for r in runs if r.fn == "laned"]
    by_event = {r.event_id: r for r in laned}
    completed = {r.event_id for r in laned if r.status == "COMPLETED"}
    per_lane: dict[str, list[tuple[int, _Run]]] = defaultdict(list)
    for event_id, (lane, n) in sent.items():
        run = by_event.get(event_id)
        if run is not None:
            per_lane[lane].append((n, run))
    order = overlaps = 0
    for members in per_lane.values():
        by_fence = sorted(members, key=lambda m: _fence(m[1]))
        order += sum(a[0] > b[0] for a, b in pairwise(by_fence))
        overlaps += sum(_overlap(a[1], b[1]) for a, b in pairwise(by_fence))
    return {
        "lanes": len(per_lane),
        "laned_runs": len(laned),
        "lane_lost": len(set(sent) - completed),
        "lane_out_of_order": order,
        "lane_overlaps_store": overlaps,
        "lane_overlaps_app": _journal_overlaps(app),
        "lane_left": _lanes_left(url),
    }


def _fence(run: _Run) -> int:
    lane = run.keys.get("lane")
    return int(lane.get("fence", 0)) if isinstance(lane, dict) else 0


def _sent_lanes(url: str, load: Load) -> dict[str, tuple[str, int]]:
    """Each accepted laned event: its lane and its place in the send order."""
    wanted = {event_id for event_id, name in load.accepted if name == LANED}
    rows = store_rows(url, f"SELECT id, payload FROM events WHERE name = '{LANED}'")
    sent = {}
    for event_id, payload in rows:
        if event_id in wanted:
            data = json.loads(payload)["data"]
            sent[event_id] = (str(data["lane"]), int(data["n"]))
    return sent


def _overlap(before: _Run, after: _Run) -> bool:
    """The later run started before the earlier one ended (or never ended)."""
    if after.started_at is None:
        return False
    return before.ended_at is None or after.started_at < before.ended_at


def _journal_overlaps(app: AppServer) -> int:
    """Step bodies of different runs of one lane that ran at the same time (app clock)."""
    spans: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for entry in app.entries("begin") + app.entries("end"):
        spans[str(entry["lane"])][str(entry["run"])].append(float(entry["at"]))
    found = 0
    for runs in spans.values():
        ranges = sorted((min(times), max(times)) for times in runs.values())
        found += sum(b[0] < a[1] for a, b in pairwise(ranges))
    return found


def _lanes_left(url: str) -> int:
    held = store_rows(url, "SELECT count(*) FROM fifo_lanes WHERE holder IS NOT NULL")[0][0]
    waiting = store_rows(url, "SELECT count(*) FROM fifo_members")[0][0]
    return int(held) + int(waiting)


def _meter_figures(
    runs: list[_Run], ledger: set[tuple[str, int, int]]
) -> dict[str, dict[str, int]]:
    scope_of: dict[str, str] = {}
    started: dict[str, int] = defaultdict(int)
    for run in runs:
        for scope in run.keys.get("rolling_window", []):
            scope_of[str(scope["hash"])] = run.fn
        if run.fn in fns.METERS and run.started_at is not None:
            started[run.fn] += 1
    times: dict[str, list[int]] = defaultdict(list)
    for scope_hash, _, at in ledger:
        if scope_hash in scope_of:
            times[scope_of[scope_hash]].append(at)
    return {
        name: _meter(limit, started[name], sorted(times[name]))
        for name, limit in fns.METERS.items()
    }


def _meter(limit: int, runs: int, times: list[int]) -> dict[str, int]:
    """Authorization n may be given at t only if n - limit was given at or before t - window."""
    window = fns.WINDOW_MS
    excess = sum(times[i + limit] - times[i] < window for i in range(len(times) - limit))
    peak = max((_in_window(times, i, window) for i in range(len(times))), default=0)
    return {
        "limit": limit,
        "runs": runs,
        "authorizations": len(times),
        "peak": peak,
        "excess": excess,
        "unledgered": max(0, runs - len(times)),
    }


def _in_window(times: list[int], i: int, window: int) -> int:
    """Authorizations in the window (times[i] - window, times[i]]."""
    lo = i
    while lo > 0 and times[lo - 1] > times[i] - window:
        lo -= 1
    return i - lo + 1
