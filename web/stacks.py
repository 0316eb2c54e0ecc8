"""One stack per distinct error on the run page: the first box that shows an error keeps its
stack; a later box with the same error (name, message and stack: a step's error raised again
by the function, its attempts failing alike, the run's error) points to that one instead."""

from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from weir.web.trace_view import SpanRow


def share_stacks(boxes: Iterable[tuple[dict[str, Any] | None, str]]) -> None:
    """`boxes`: the page's error boxes in reading order, each with words naming it."""
    first: dict[tuple[str, str, str], dict[str, Any]] = {}
    for number, (error, label) in enumerate(boxes):
        if not error or not error.get("stack"):
            continue
        seen = first.setdefault((error["name"], error["message"], error["stack"]), error)
        if seen is error:
            error["anchor"], error["label"] = f"stack-{number}", label
        else:
            error["same_as"], error["same_label"] = seen["anchor"], seen["label"]


def page_boxes(page: dict[str, Any]) -> list[tuple[dict[str, Any] | None, str]]:
    """The error boxes of a run page's context (`run_detail.context`), in reading order."""
    boxes: list[tuple[dict[str, Any] | None, str]] = []
    for step in page["steps"]:
        if step["show_attempts"]:
            boxes += _attempts(step["attempts"], f"of {step['name']}")
        boxes.append((step["error"], f"the error of {step['name']}"))
    for step in page["unfinished"]:
        boxes += _attempts(step["attempts"], f"of {step['name']}")
    boxes += _attempts(page["function_attempts"], "of the function")
    boxes.append((page["run_error"] if page["output"] else None, "the run's error"))
    return boxes


def _attempts(tries: list[dict[str, Any]], of: str) -> list[tuple[dict[str, Any] | None, str]]:
    return [(a["error"], f"attempt {a['number']} {of}") for a in tries]


def share_span_stacks(page: dict[str, Any], spans: list[SpanRow]) -> list[SpanRow]:
    """The trace's spans, each stack that a box of the page (or an earlier span) already
    shows pointing to it: a span's panel repeats no stack the page has shown."""
    shown = {
        box["stack"]: (box["anchor"], box["label"])
        for box, _ in page_boxes(page)
        if box and box.get("stack") and box.get("anchor")
    }
    kept = []
    for row in spans:
        if row.stack and row.stack in shown:
            anchor, label = shown[row.stack]
            row = replace(row, stack="", stack_ref=anchor, stack_ref_label=label)
        elif row.stack:
            shown[row.stack] = (f"span-{row.span_id}", f"span {row.name}")
        kept.append(row)
    return kept
