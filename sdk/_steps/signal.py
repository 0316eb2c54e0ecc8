"""A signal as step.wait_for_signal returns it (Inngest's `{signal, data}`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Signal:
    """The signal a run received: its name, its data, and the delivery a `step.reply`
    answers (None from a server that does not keep deliveries)."""

    signal: str
    data: Any
    delivery_id: str | None = None


def as_signal(value: Any) -> Signal | None:
    """A signal wait's result (memo unwrapped): the signal, or None on timeout."""
    if value is None:
        return None
    if not isinstance(value, dict) or not isinstance(value.get("signal"), str):
        raise ValueError(f"a signal wait's result must be {{signal, data}}, got {value!r:.200}")
    delivery = value.get("delivery_id")
    delivery_id = delivery if isinstance(delivery, str) else None
    return Signal(value["signal"], value.get("data"), delivery_id)
