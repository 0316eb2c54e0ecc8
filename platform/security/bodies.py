"""Reading a request body with a cap, before any parsing: a client that sends (or claims to
send) more than the cap is refused without the rest being read into memory."""

from fastapi import Request


class BodyTooLarge(Exception):
    def __init__(self, what: str, cap: int) -> None:
        super().__init__(
            f"the {what} is larger than {cap} bytes ({cap / 1024 / 1024:.1f} MiB), "
            "the most Weir accepts"
        )


async def read_capped(request: Request, cap: int, what: str = "request body") -> bytes:
    declared = request.headers.get("content-length", "")
    if declared.isascii() and declared.isdigit() and int(declared) > cap:
        raise BodyTooLarge(what, cap)
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():  # chunked uploads are counted as they arrive
        size += len(chunk)
        if size > cap:
            raise BodyTooLarge(what, cap)
        chunks.append(chunk)
    return b"".join(chunks)
