"""Cancel-on: a new run subscribes to the events that may cancel it (matching is in
`cancellation`); each subscription expires `timeout` after the run was scheduled."""

from weir.platform.gates import cancel_on
from weir.platform.runtime import cancellation
from weir.platform.runtime.flow.candidate import Candidate
from weir.platform.runtime.tx import Tx


def subscribe(tx: Tx, cand: Candidate, run_id: str) -> None:
    for entry in cand.fn.config.cancel_on:
        expires = cancel_on.expires_at_ms(tx.now, entry.timeout_ms)
        cancellation.subscribe(tx, run_id, entry.event, entry.if_expr, expires)
