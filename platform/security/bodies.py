"""Reading a request body with a cap, before any parsing: a client that sends (or claims to
send) more than the cap is refused without the rest being read into memory."""

from fastapi import Request
from starlette.datastructures import Headers


class BodyTooLarge(Exception):
    def __init__(self, what: str, cap: int) -> None:
        super().__init__(
            f"the {what} is larger than {cap} bytes ({cap / 1024 / 1024:.1f} MiB), "
            "the most Weir accepts"
        )


def declared_length(headers: Headers) -> int | None:
    """The Content-Length a request declares, when it is a plain number of bytes."""
    value = headers.get("content-length", "")
    return int(value) if value.isascii() and value.isdigit() else None


async def read_capped(request: Request, cap: int, what: str = "request body") -> bytes:
    declared = declared_length(request.headers)
    if declared is not None and declared > cap:
        raise BodyTooLarge(what, cap)
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():  # chunked uploads are counted as they arrive
        size += len(chunk)
        if size > cap:
            raise BodyTooLarge(what, cap)
        chunks.append(chunk)
    return b"".join(chunks)
