"""The concurrency keys a run needs a slot of: the function's concurrency limits, its app's
limit and its resource scopes (docs/semantics.md, Concurrency scopes), each tied to the live
capacity that sizes it.

A capacity is declared per scope, not per evaluated key: `scope stripe` with limit 3 gives
every key value of that scope 3 slots, and `weir capacity set` changes them all. The ids are
hashes of the scope's identity, so lanes stay small; the names are what people read and type.
"""

from typing import Any

from weir.expressions import BudgetExceeded, key_hash
from weir.platform.foundation.record_type import record
from weir.platform.functions import FunctionConfig
from weir.platform.functions.parse.scopes import check_key_text
from weir.platform.registry import Function
from weir.platform.runtime.keys import evaluate_key, key_text
from weir.platform.store.queue import SlotLimit

MAX_NAME = 200  # readable names cut expressions short; the id is exact anyway


class ScopeKeyError(ValueError):
    """A scope's evaluated key breaks the key rules: no run may start with it."""


@record
class Declared:
    """One limit a function declares, as the claim will apply it."""

    capacity_id: str
    name: str  # readable: "app shop", "scope stripe", "shop-sync concurrency [event.data.x]"
    limit: int
    namespace: str  # of the key hashes of its runs
    key: str | None  # a CEL expression over `event`
    strict: bool  # a scope: its evaluated key must keep the key rules, or the run cannot start
    slot: str  # where the run's keys show it: "concurrency0", "app", "scope2"


def declared(
    fn_id: str, slug: str, app_id: str, app_name: str, cfg: FunctionConfig
) -> list[Declared]:
    """Every limit of the function, in a fixed order; unlimited concurrency (0) needs none."""
    found: list[Declared] = []
    for i, limit in enumerate(cfg.concurrency):
        if limit.limit <= 0:
            continue
        owner = fn_id if limit.scope == "fn" else limit.scope
        who = slug if limit.scope == "fn" else limit.scope
        name = _name(f"{who} concurrency", limit.key)
        ident = f"concurrency\x00{owner}\x00{limit.key or ''}"
        found.append(
            Declared(
                _id(ident),
                name,
                limit.limit,
                f"concurrency\x00{owner}",
                limit.key,
                False,
                f"concurrency{i}",
            )
        )
    if cfg.app_limit is not None:
        ident = f"app\x00{app_id}"
        found.append(
            Declared(_id(ident), f"app {app_name}", cfg.app_limit, ident, None, True, "app")
        )
    for i, scope in enumerate(cfg.scopes):
        if scope.name is not None:
            ident = f"scope\x00{scope.name}"
            name = f"scope {scope.name}"
        else:
            ident = f"scope\x00{fn_id}\x00{scope.key}"
            name = _name(f"{slug} scope", scope.key)
        found.append(Declared(_id(ident), name, scope.limit, ident, scope.key, True, f"scope{i}"))
    return found


def of_function(fn: Function) -> list[Declared]:
    return declared(fn.id, fn.slug, fn.app_id, "", fn.config)


def _id(identity: str) -> str:
    return key_hash(f"capacity\x00{identity}")


def _name(prefix: str, key: str | None) -> str:
    if key is None:
        return prefix
    text = f"{prefix} [{key}]"
    return text if len(text) <= MAX_NAME else text[: MAX_NAME - 2] + "…]"


def key_problem(fn: Function, event: dict[str, Any]) -> str | None:
    """Why the event cannot start a run of `fn` (a scope key breaking the rules), or None."""
    for decl in of_function(fn):
        if decl.strict and decl.key is not None:
            _, problem = _scope_key(decl, event)
            if problem is not None:
                return problem
    return None


def _scope_key(decl: Declared, event: dict[str, Any]) -> tuple[str, str | None]:
    """(text, None), or ("", why it cannot be a key)."""
    assert decl.key is not None
    text = key_text(decl.key, event)
    if isinstance(text, BudgetExceeded):
        return "", f"{decl.name}: {text}"
    if not isinstance(text, str):
        return "", f"{decl.name}: the key expression {decl.key!r} failed ({text})"
    problem = check_key_text(text)
    if problem is not None:
        return "", f"{decl.name}: the evaluated key {text[:80]!r} {problem}"
    return text, None


@record
class RunLimits:
    limits: tuple[SlotLimit, ...]
    shown: dict[str, Any]  # the run's keys, readable: slot name -> key, hash, limit, capacity
    warnings: list[str]


def run_limits(fn: Function, event: dict[str, Any]) -> RunLimits:
    """The keys a run of `fn` on `event` needs; raises ScopeKeyError on a broken scope key."""
    limits: list[SlotLimit] = []
    shown: dict[str, Any] = {}
    warnings: list[str] = []
    for decl in of_function(fn):
        if decl.strict:
            text, hashed = _strict_key(decl, event)
        else:  # Inngest's concurrency keys: a failing expression uses the empty key
            evaluated = evaluate_key(decl.namespace, decl.key, event)
            text, hashed = evaluated.text, evaluated.hash
            warnings += [evaluated.warning] if evaluated.warning else []
        limits.append(SlotLimit(hashed, decl.limit, decl.capacity_id))
        shown[decl.slot] = {
            "key": text,
            "hash": hashed,
            "limit": decl.limit,
            "scope": decl.name,
            "capacity": decl.capacity_id,
        }
    return RunLimits(tuple(limits), shown, warnings)


def _strict_key(decl: Declared, event: dict[str, Any]) -> tuple[str, str]:
    if decl.key is None:
        return "", key_hash(decl.namespace)
    text, problem = _scope_key(decl, event)
    if problem is not None:
        raise ScopeKeyError(problem)
    return text[:512], key_hash(f"{decl.namespace}\x00{text}")
