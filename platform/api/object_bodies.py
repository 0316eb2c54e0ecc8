"""A route's JSON object body, read within its cap: each way it can be wrong is answered
saying what was wrong and what is allowed (the pause and signal routes)."""

from collections.abc import Callable
from typing import Any

from fastapi import Request
from fastapi.responses import JSONResponse
from weir.platform.foundation import jsonvalues
from weir.platform.security.bodies import BodyTooLarge, read_capped


class BadBody(Exception):
    """The body cannot be taken: its answer's status and words."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status

    def response(self) -> JSONResponse:
        return JSONResponse({"error": str(self)}, self.status)


async def read_object(
    request: Request,
    cap: int,
    what: str,
    example: str,
    allowed: set[str],
    *,
    loads: Callable[[bytes], Any] = jsonvalues.loads,
    empty: bytes = b"",
) -> dict[str, Any]:
    """The body as a JSON object of `allowed` fields (`empty`: what an empty body reads as);
    raises BadBody. `what` names the request in the cap's refusal, `example` the shape."""
    try:
        raw = await read_capped(request, cap, what)
    except BodyTooLarge as exc:
        raise BadBody(str(exc), 413) from None
    try:
        value = loads(raw or empty)
    except ValueError as exc:
        raise BadBody(f"the body is not valid JSON: {exc}") from None
    except RecursionError:
        raise BadBody("the body is not valid JSON: it is nested too deeply") from None
    if not isinstance(value, dict):
        raise BadBody(f"the body must be a JSON object, like {example}")
    unknown = sorted(set(value) - allowed)
    if unknown:
        raise BadBody(f"unknown field(s) {unknown}; allowed: {sorted(allowed)}")
    return value
