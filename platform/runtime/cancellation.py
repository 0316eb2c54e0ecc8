"""Cancel-on subscriptions: an incoming event that matches cancels the run between steps."""

import json
from typing import Any

from weir.platform.ids import id_time_ms
from weir.platform.runtime.keys import expression_holds
from weir.platform.runtime.runs import cancel_run
from weir.platform.runtime.tx import Tx
from weir.platform.store import records


def subscribe(tx: Tx, run_id: str, event: str, expression: str | None, expires_at: int) -> None:
    records.insert_wait(
        tx.conn,
        kind="cancel",
        run_id=run_id,
        step_id=None,
        event_name=event,
        expression=expression,
        created_at=tx.now,
        expires_at=expires_at,
    )


def try_cancel(tx: Tx, wait: Any, event_id: str, payload: dict[str, Any]) -> None:
    if wait.expires_at <= tx.now or id_time_ms(event_id) < id_time_ms(wait.run_id):
        return
    run = records.get_run(tx.conn, wait.run_id)
    if run is None or event_id in json.loads(run.event_ids):
        return  # never its own trigger
    from weir.platform.runtime.waits import first_event

    if expression_holds(wait.expression, {"event": first_event(tx, run.id), "async": payload}):
        cancel_run(tx, run.id, f"cancelled by event {payload['name']!r} ({event_id})")
