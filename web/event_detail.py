"""What the event page shows: every effect the event had (reads.events.EventEffects), each
with its function, the run it touched and the rule that decided, and its payload."""

import json
from typing import Any

from weir.platform.foundation.vocabulary import SYSTEM_EVENT_PREFIX
from weir.platform.reads.events import Effect, EventEffects
from weir.platform.service import Platform
from weir.web import display


def context(weir: Platform, found: EventEffects) -> dict[str, Any]:
    event = found.event
    return {
        "event": {
            "id": event.id,
            "name": event.name,
            "user_id": event.payload.get("id"),
            "received_at": display.clock(event.received_at),
            "payload": json.dumps(event.payload, indent=2, ensure_ascii=False),
            "replayable": not event.name.startswith(SYSTEM_EVENT_PREFIX),
        },
        "effects": [_effect(weir, e) for e in found.effects],
        "matching": _matching(weir, event.name),
    }


def _effect(weir: Platform, effect: Effect) -> dict[str, Any]:
    label, tone = display.effect_label(str(effect.kind))
    name, slug = display.function_label(weir, effect.function_id)
    run = effect.run
    return {
        "kind": str(effect.kind),
        "label": label,
        "tone": tone,
        "function": name,
        "function_slug": slug,
        "run_id": run.id if run else None,
        "run_status": run.status if run else None,
        "words": effect.words,
        "at": display.clock(effect.at),
    }


def _matching(weir: Platform, name: str) -> list[str]:
    """Functions whose event triggers name this event (before any `if`)."""
    return sorted(
        fn.config.name or fn.slug
        for fn in weir.registry.by_slug.values()
        if any(getattr(t, "event", None) == name for t in fn.config.triggers)
    )
