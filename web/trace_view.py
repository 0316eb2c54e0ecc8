"""The run page's trace: the span tree of `reads.traces` as rows of a waterfall, each span
indented under its parent, its bar placed as a percentage of the run's time (as the
timeline's are), and its attributes, status and error in a panel that opens in place (a
`<details>`: it needs no JavaScript)."""

from dataclasses import dataclass

from weir.platform.foundation.spans import Span, SpanKind, SpanStatus, Trace
from weir.web.display import clock, span

MIN_WIDTH = 0.6  # percent: an instant still shows as a visible tick
_STACK = "exception.stacktrace"


@dataclass(frozen=True)
class SpanRow:
    span_id: str
    parent_id: str
    name: str
    kind: str
    status: str  # ok, error, unset; "open" while it runs
    depth: int
    start: str
    took: str
    left: float
    width: float
    message: str
    stack: str
    attributes: list[tuple[str, str]]
    links: list[str]  # run ids of linked runs (an invoke's child)
    stack_ref: str = ""  # the anchor of the box that shows this span's stack (web/stacks.py)
    stack_ref_label: str = ""


def rows(found: Trace, now: int) -> list[SpanRow]:
    """Depth first, children in start order: the tree as a list a page reads top down."""
    if not found.spans:
        return []
    root = found.spans[0]
    t0 = root.start_ms
    t1 = max([root.end_ms or now, *((s.end_ms or now) for s in found.spans)])
    total = max(t1 - t0, 1)
    children: dict[str, list[Span]] = {}
    for s in found.spans[1:]:
        children.setdefault(s.parent_id or root.span_id, []).append(s)
    ordered: list[tuple[Span, int]] = []

    def walk(node: Span, depth: int) -> None:
        ordered.append((node, depth))
        for child in sorted(children.get(node.span_id, []), key=lambda c: c.start_ms):
            walk(child, depth + 1)

    walk(root, 0)
    return [_row(s, depth, t0, total, now) for s, depth in ordered]


def _row(s: Span, depth: int, t0: int, total: int, now: int) -> SpanRow:
    end = s.end_ms if s.end_ms is not None else now
    left = 100 * (s.start_ms - t0) / total
    width = max(MIN_WIDTH, 100 * (end - s.start_ms) / total)
    took = span(end - s.start_ms) + ("" if s.end_ms is not None else " so far")
    attributes = [(k, _text(v)) for k, v in sorted(s.attributes.items()) if k != _STACK]
    return SpanRow(
        span_id=s.span_id,
        parent_id=s.parent_id or "",
        name=s.name,
        kind=str(s.kind),
        status="open" if s.end_ms is None else str(s.status),
        depth=depth,
        start=clock(s.start_ms),
        took=took,
        left=round(min(left, 100 - MIN_WIDTH), 3),
        width=round(min(width, 100 - min(left, 100 - MIN_WIDTH)), 3),
        message=s.message if s.status == SpanStatus.ERROR else "",
        stack=str(s.attributes.get(_STACK, "")),
        attributes=attributes,
        links=[
            str(link.attributes.get("weir.run.id"))
            for link in s.links
            if s.kind == SpanKind.INVOKE and link.attributes.get("weir.run.id")
        ],
    )


def _text(value: object) -> str:
    if isinstance(value, tuple):
        return ", ".join(str(v) for v in value)
    return str(value)
