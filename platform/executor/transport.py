"""How a call reaches its app when not over HTTP: the seam the Connect gateway plugs into.

The driver builds the same request either way (body, headers, signature, timeout) and judges
the answer the same way; only the carrying differs. A function registered under a Connect
URL (`wss://connect?…`) is called over its worker's socket through `Transport.send`.
"""

from typing import Protocol

from weir.platform.executor.response import RawResponse
from weir.platform.foundation.record_type import record
from weir.platform.registry import Function


@record
class AppRequest:
    """One call as the driver made it, with the identities a socket transport routes by."""

    fn: Function
    body: bytes
    headers: dict[str, str]
    step_id: str
    run_id: str
    job_id: str


class Transport(Protocol):
    async def send(self, request: AppRequest) -> RawResponse:
        """The app's answer as an HTTP response would carry it; TransportError when none came."""
        ...
