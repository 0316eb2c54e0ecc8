"""Finished runs written straight into a store, for tests of reads over many runs (search
windows, paging): one run per output, 1 s apart from `t0`, the last the newest."""

import json
from typing import Any

from sqlalchemy import Engine, insert
from weir.platform.foundation.ids import new_id
from weir.platform.foundation.record_type import record
from weir.platform.store.engine.schema import events, runs


def finished_runs(engine: Engine, outputs: list[str], t0: int) -> list[str]:
    """Insert the runs (output `{"said": output}`); their ids, oldest first."""
    rows: list[dict[str, Any]] = []
    for i, output in enumerate(outputs):
        at = t0 + i * 1000
        rows.append(
            {
                "id": new_id(at),
                "function_id": "fn-search",
                "status": "COMPLETED",
                "event_ids": "[]",
                "created_at": at,
                "started_at": at,
                "ended_at": at + 1,
                "output": json.dumps({"said": output}),
                "score": at,
                "lane": "search",
            }
        )
    with engine.begin() as conn:
        conn.execute(insert(runs), rows)
    return [str(r["id"]) for r in rows]


@record
class Seeded:
    """One run to seed, with the data of its triggering event."""

    status: str
    output: Any
    data: dict[str, Any]
    function_id: str = "fn-query"
    event_name: str = "shop/order.placed"


def runs_with_events(engine: Engine, seeded: list[Seeded], t0: int) -> list[str]:
    """Insert each run and its triggering event, 1 s apart from `t0` (the last the newest);
    the run ids, oldest first. The event's own id is `e-<n>`."""
    run_rows: list[dict[str, Any]] = []
    event_rows: list[dict[str, Any]] = []
    for i, seed in enumerate(seeded):
        at = t0 + i * 1000
        event_id = new_id(at)
        payload = {"name": seed.event_name, "data": seed.data, "id": f"e-{i}", "ts": at, "user": {}}
        event_rows.append(
            {
                "id": event_id,
                "name": seed.event_name,
                "user_id": f"e-{i}",
                "ts": at,
                "received_at": at,
                "payload": json.dumps(payload),
            }
        )
        run_rows.append(
            {
                "id": new_id(at),
                "function_id": seed.function_id,
                "status": seed.status,
                "event_ids": json.dumps([event_id]),
                "created_at": at,
                "started_at": at,
                "ended_at": at + 5,
                "output": json.dumps(seed.output),
                "score": at,
                "lane": "query",
            }
        )
    with engine.begin() as conn:
        conn.execute(insert(events), event_rows)
        conn.execute(insert(runs), run_rows)
    return [str(r["id"]) for r in run_rows]
