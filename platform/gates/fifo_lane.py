"""FIFO lanes: one run of a lane at a time, in admission order (like an SQS FIFO message
group). The store keeps the holder and the queue behind it; this module only says why a run
waits, naming the lane's key and the run that holds it."""

from __future__ import annotations

from weir.platform.foundation.record_type import record
from weir.platform.foundation.vocabulary import GateName
from weir.platform.gates.decisions import WaitReason, key_text


@record(slots=True)
class LaneWaitReason(WaitReason):
    """A run queued behind its lane's holder; `holder_run_id` is the run that has the lane."""

    holder_run_id: str = ""


def wait_reason(key: str, holder_run_id: str) -> LaneWaitReason:
    """No end time: the lane moves on when its holder finishes."""
    words = (
        f"{GateName.LANE}: queued behind run {holder_run_id}, which holds the lane{key_text(key)}"
    )
    return LaneWaitReason(
        gate=GateName.LANE, key=key, until_ms=None, words=words, holder_run_id=holder_run_id
    )
