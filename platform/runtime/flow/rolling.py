"""Strict rolling windows around run creation: each window's scope is fixed when the run is
created (its key evaluated on the triggering event), and the run's start item carries them,
so that the claim checks and charges them on the start itself (`store.rolling_windows`).

A window's scope is the function's own (per window rule and key) unless it names a shared
meter (`rate_name`): then it is the meter's, per key value, whichever function or app
declares it, so every function naming it draws on one budget.
"""

from dataclasses import replace

from weir.expressions import key_hash, stable_key
from weir.platform.foundation.vocabulary import GateName
from weir.platform.functions import RollingWindow
from weir.platform.runtime.capacity import rates as rate_capacities
from weir.platform.runtime.flow.candidate import Candidate
from weir.platform.runtime.keys import EvaluatedKey, evaluate_key, evaluate_value
from weir.platform.runtime.runs import RunPlan
from weir.platform.store.flow import rolling_windows
from weir.platform.store.flow.rolling_windows import Scope


def place_windows(cand: Candidate, plan: RunPlan) -> RunPlan:
    """The run's start item carries its windows' scopes; unchanged without windows."""
    windows = cand.fn.config.rolling_windows
    if not windows:
        return plan
    sized = rate_capacities.for_windows(cand.fn.id, cand.fn.slug, windows)
    scopes = [
        replace(_scope(cand, window), capacity=decl.capacity_id)
        for window, decl in zip(windows, sized, strict=True)
    ]
    shown = [{"key": s.key, "hash": s.hash, "meter": s.rate_name} for s in scopes]
    return replace(
        plan,
        keys={**plan.keys, GateName.ROLLING_WINDOW.value: shown},
        start_payload={**plan.start_payload, **rolling_windows.payload(scopes)},
    )


def _scope(cand: Candidate, window: RollingWindow) -> Scope:
    if window.rate_name is None:
        namespace = (
            f"{GateName.ROLLING_WINDOW}\x00{cand.fn.id}\x00{window.limit}\x00{window.window_ms}"
        )
        key = _key(cand, namespace, window.key)
        return Scope(key.hash, window.limit, window.window_ms, key.text)
    # A meter is shared across functions whose key expressions differ: its scope is the
    # key's value alone (in full, not the readable text cut to 512 bytes).
    namespace = f"{GateName.ROLLING_WINDOW}\x00meter\x00{window.rate_name}"
    key = _key(cand, namespace, window.key)
    value = "" if window.key is None or key.warning else _full_text(window.key, cand)
    scope_hash = key_hash(f"{namespace}\x00{value}")
    return Scope(scope_hash, window.limit, window.window_ms, key.text, window.rate_name)


def _key(cand: Candidate, namespace: str, expression: str | None) -> EvaluatedKey:
    key = evaluate_key(namespace, expression, cand.event)
    if key.warning is not None:
        note = f"{GateName.ROLLING_WINDOW}: {key.warning}"
        if note not in cand.warnings:
            cand.warnings.append(note)
    return key


def _full_text(expression: str, cand: Candidate) -> str:
    return stable_key(evaluate_value(expression, cand.event))
