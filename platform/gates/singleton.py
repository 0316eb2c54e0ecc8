"""Singleton: one active run per key, for the whole run (sleeps and waits included)."""

from __future__ import annotations

from typing import Literal

from weir.platform.foundation.record_type import record
from weir.platform.foundation.vocabulary import GateName
from weir.platform.gates.decisions import SkipReason, key_text

Mode = Literal["skip", "cancel"]
Action = Literal["proceed", "skip", "cancel_holder"]
MODES: tuple[Mode, ...] = ("skip", "cancel")


@record(slots=True)
class SingletonDecision:
    """`proceed`: take the key. `skip`: record the new run as Skipped. `cancel_holder`:
    cancel `holder_run_id`, then the new run takes the key."""

    action: Action
    holder_run_id: str | None
    skip: SkipReason | None


def parse_mode(value: str) -> Mode:
    for mode in MODES:
        if value == mode:
            return mode
    raise ValueError(f"singleton.mode = {value!r} is not allowed; allowed: skip, cancel")


def _skip_reason(key: str, holder: str) -> SkipReason:
    words = f"{GateName.SINGLETON}: run {holder} is already active{key_text(key)}"
    return SkipReason(gate=GateName.SINGLETON, key=key, words=words, holder_run_id=holder)


def decide(mode: Mode, holder_run_id: str | None, key: str = "") -> SingletonDecision:
    checked = parse_mode(mode)  # a stored string may not be a valid mode: fail clearly
    if holder_run_id is None:
        return SingletonDecision("proceed", None, None)
    if checked == "skip":
        return SingletonDecision("skip", holder_run_id, _skip_reason(key, holder_run_id))
    return SingletonDecision("cancel_holder", holder_run_id, None)
