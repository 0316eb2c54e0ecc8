"""Access to the running platform from a request."""

from fastapi import Request
from weir.platform.service import Platform


def platform(request: Request) -> Platform:
    value: Platform = request.app.state.platform
    return value
