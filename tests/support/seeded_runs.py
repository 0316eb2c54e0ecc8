"""Finished runs written straight into a store, for tests of reads over many runs (search
windows, paging): one run per output, 1 s apart from `t0`, the last the newest."""

import json
from typing import Any

from sqlalchemy import Engine, insert
from weir.platform.foundation.ids import new_id
from weir.platform.store.engine.schema import runs


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
