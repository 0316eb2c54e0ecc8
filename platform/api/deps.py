"""Access to the running platform from a request."""

from fastapi import Request
from weir.platform.service import Platform


async def platform(request: Request) -> Platform:
    # async: FastAPI runs a plain `def` dependency on its thread pool, a thread hop (about
    # half a millisecond) before every route that uses it, POST /e/{key} among them.
    value: Platform = request.app.state.platform
    return value
