"""Signals as records: the one wait holding a signal name, and the deliveries that keep the
waiting run's answer for the sender."""

import json
from typing import Any

from sqlalchemy import Connection, insert, select, update
from weir.platform.foundation.record_type import record
from weir.platform.foundation.vocabulary import WaitKind
from weir.platform.store.engine.schema import signal_deliveries, waits
from weir.platform.store.records.waits import Wait, wait_from_row


@record(slots=True)
class Delivery:
    id: str
    signal: str
    run_id: str
    step_id: str
    delivered_at: int
    answered: bool
    answer: Any  # the reply's data (None until answered, or a reply of null)
    answered_at: int | None


def signal_wait(conn: Connection, signal: str) -> Wait | None:
    """The wait holding `signal` (unique: index ux_waits_signal)."""
    query = select(waits).where(waits.c.kind == WaitKind.SIGNAL, waits.c.event_name == signal)
    row = conn.execute(query).first()
    return None if row is None else wait_from_row(row)


def record_delivery(conn: Connection, delivery: Delivery) -> None:
    values = {
        "id": delivery.id,
        "signal": delivery.signal,
        "run_id": delivery.run_id,
        "step_id": delivery.step_id,
        "delivered_at": delivery.delivered_at,
    }
    conn.execute(insert(signal_deliveries).values(values))


def record_answer(conn: Connection, delivery_id: str, run_id: str, data: Any, at: int) -> bool:
    """The first answer counts, and only from the run the signal was delivered to."""
    text = json.dumps(data, separators=(",", ":"))
    found = conn.execute(
        update(signal_deliveries)
        .where(
            signal_deliveries.c.id == delivery_id,
            signal_deliveries.c.run_id == run_id,
            signal_deliveries.c.answered_at.is_(None),
        )
        .values(answer=text, answered_at=at)
    )
    return found.rowcount == 1


def get_delivery(conn: Connection, delivery_id: str) -> Delivery | None:
    row = conn.execute(
        select(signal_deliveries).where(signal_deliveries.c.id == delivery_id)
    ).first()
    if row is None:
        return None
    answered = row.answered_at is not None
    return Delivery(
        id=row.id,
        signal=row.signal,
        run_id=row.run_id,
        step_id=row.step_id,
        delivered_at=int(row.delivered_at),
        answered=answered,
        answer=json.loads(row.answer) if answered and row.answer is not None else None,
        answered_at=int(row.answered_at) if answered else None,
    )
