"""What the run page shows, shaped from the run's read model (`reads.runs.RunView`): its
state and the reason for it (`reads.run_state`, the same words the APIs answer), its
timeline, every attempt of every step with its error and stack, and the runs it links to."""

import json
from typing import Any

from weir.platform.foundation.vocabulary import WRAPPED_MEMO_OPS, RunStateKind, RunStatus
from weir.platform.reads.records import RunLink, Step
from weir.platform.reads.run_state import RunState
from weir.platform.reads.runs import Attempt, RunView
from weir.platform.service import Platform
from weir.web import display, stacks, timeline

STATE_TITLES = {
    RunStateKind.EXECUTING: "What is this run doing?",
    RunStateKind.QUEUED: "Why is this run waiting?",
}


def context(weir: Platform, view: RunView, app_names: dict[str, str]) -> dict[str, Any]:
    now = weir.clock.now_ms()
    run = view.run
    trigger = display.trigger_of(run, {e.id: e.name for e in view.events})
    fn = weir.registry.by_id.get(run.function_id)
    memoized = {s.step_id for s in view.steps}
    page = {
        "run": display.run_row(weir, run, trigger, now, view.state),
        "app": app_names.get(fn.app_id, fn.app_id) if fn else "",
        "ended": run.ended,
        "output": _json(run.output) if run.ended else "",
        "run_error": _error(run.output) if run.status != RunStatus.COMPLETED else None,
        "failed": run.status in (RunStatus.FAILED, RunStatus.CANCELLED),
        "state": state_dict(view.state, now) if not run.ended else None,
        "bars": timeline.waterfall(view, now),
        "steps": [_step(s, view) for s in view.steps],
        "unfinished": [
            {"id": sid, "name": _attempt_name(tries, sid), "attempts": _attempts(tries)}
            for sid, tries in view.attempts.items()
            if sid and sid not in memoized
        ],
        "function_attempts": _attempts(view.attempts.get("", []), errors_only=True),
        "progress": view.progress,
        "events": [
            {
                "id": e.id,
                "name": e.name,
                "at": display.clock(e.received_at),
                "payload": _json(e.payload),
            }
            for e in view.events
        ],
        "links": _links(weir, view),
        "warnings": list(run.warnings),
        "can_rerun": bool(view.events) and run.function_id in weir.registry.by_id,
        "lane": _lane(run.keys) if not run.ended else None,
    }
    stacks.share_stacks(stacks.page_boxes(page))
    return page


def _lane(keys: dict[str, Any]) -> dict[str, str] | None:
    """The FIFO lane an unfinished run holds or waits in, for a link to its line."""
    lane = keys.get("lane")
    if not isinstance(lane, dict) or not isinstance(lane.get("hash"), str):
        return None
    return {"hash": str(lane["hash"]), "key": str(lane.get("key", ""))}


def state_dict(state: RunState, now: int) -> dict[str, Any]:
    """A run state for the template: its words and each field that is set, as text."""
    facts: list[tuple[str, str]] = []
    if state.step_id or state.step_name:
        facts.append(("Step", state.step_name or state.step_id or ""))
    if state.attempt is not None:
        most = f" of {state.max_attempts}" if state.max_attempts else ""
        facts.append(("Attempt", f"{state.attempt}{most}"))
    if state.since is not None:
        facts.append(("Since", f"{display.clock(state.since)} ({_ago(now - state.since)})"))
    if state.until is not None:
        facts.append(("Until", f"{display.clock(state.until)}{_ahead(state.until - now)}"))
    if state.key is not None and state.kind != RunStateKind.CONCURRENCY:
        facts.append(("Key", state.key or "(function-wide)"))
    if state.event:
        facts.append(("Event", state.event))
    if state.expression:
        facts.append(("If", state.expression))
    if state.function:
        facts.append(("Function", state.function))
    if state.error:
        facts.append(("Last error", state.error))
    for name, value in state.details.items():  # a new gate's own fields, as they are
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        facts.append((name.replace("_", " ").capitalize(), text))
    return {
        "kind": str(state.kind),
        "gate": state.gate,
        "title": STATE_TITLES.get(state.kind, "Why is this run waiting?"),
        "words": state.words,
        "facts": facts,
        "slots": [
            {
                "key": s.key or "(function-wide)",
                "used": s.used,
                "limit": s.limit,
                "holders": list(dict.fromkeys(s.holders)),
            }
            for s in state.slots
        ],
        "child": state.child_run_id,
        "also": [state_dict(a, now) for a in state.also],
    }


def _ago(ms: int) -> str:
    return f"{display.span(max(ms, 0))} ago"


def _ahead(ms: int) -> str:
    return f" (in {display.span(ms)})" if ms > 0 else " (due now)"


def _step(step: Step, view: RunView) -> dict[str, Any]:
    memo = step.memo
    wrapped = isinstance(memo, dict) and step.op in WRAPPED_MEMO_OPS
    error = memo.get("error") if wrapped else None
    value = memo.get("data") if wrapped else memo
    tries = view.attempts.get(step.step_id, [])
    child = view.links.children.get(step.step_id)
    attempts = _attempts(tries)
    return {
        "id": step.step_id,
        "name": step.name or step.step_id,
        "op": step.op,
        "at": display.clock(step.at),
        "status": view.step_status.get(step.step_id, "COMPLETED"),
        "error": _error(error) if error is not None else None,
        "output": _json(value),
        "attempts": attempts,
        # one attempt that worked needs no list
        "show_attempts": len(attempts) > 1 or bool(attempts and attempts[0]["error"]),
        "child": child.id if child else None,
    }


def _attempt_name(tries: list[Attempt], step_id: str) -> str:
    for a in tries:
        for op in a.entry.detail.ops:
            if op.id == step_id and op.name:
                return op.name
    return step_id


def _attempts(tries: list[Attempt], errors_only: bool = False) -> list[dict[str, Any]]:
    return [
        {
            "number": a.number,
            "status": a.entry.status,
            "at": display.clock(a.entry.started_at),
            "took": display.span((a.entry.ended_at or a.entry.started_at) - a.entry.started_at),
            "error": _error(a.error) if a.error is not None else None,
        }
        for a in tries
        if not errors_only or a.error is not None
    ]


def _error(error: Any) -> dict[str, Any] | None:
    """An error object as name, message and its multi-line stack (when the SDK sent one)."""
    if error is None:
        return None
    if not isinstance(error, dict):
        return {"name": "Error", "message": str(error), "stack": ""}
    stack = error.get("stack")
    return {
        "name": str(error.get("name") or "Error"),
        "message": str(error.get("message") or ""),
        "stack": stack if isinstance(stack, str) else "",
    }


def _json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


def _links(weir: Platform, view: RunView) -> dict[str, Any]:
    links = view.links

    def one(link: RunLink | None) -> dict[str, str] | None:
        if link is None:
            return None
        name, _ = display.function_label(weir, link.function_id)
        return {"id": link.id, "function": name, "status": link.status}

    names = {s.step_id: s.name for s in view.steps}
    for row in view.history:
        names.setdefault(row.step_id or "", row.name)
    return {
        "parent": one(links.parent),
        "parent_step": links.parent_step_name or links.parent_step,
        "original": one(links.original),
        "reruns": [one(r) for r in links.reruns],
        "children": [
            {**(one(child) or {}), "step": names.get(step, step)}
            for step, child in links.children.items()
        ],
    }
