"""A 10-step no-op function written with the official `inngest` SDK, for bench_official.py.

Served by uvicorn (one or several worker processes) in cloud mode, so it checks the signature
of every request as a production app would. With BENCH_RECORD set, each worker process appends
its first RECORD_LIMIT POSTs (query, headers, body) to that file as JSON lines: the bench takes
the calls of one run from it and replays them to the app without Weir.
"""

import base64
import json
import os
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import inngest
import inngest.fast_api
from fastapi import FastAPI

STEPS = 10
RECORD_LIMIT = 400

client = inngest.Inngest(app_id=os.environ.get("APP_ID", "officialbench"))


def _nothing() -> None:
    return None


@client.create_function(fn_id="steps", trigger=inngest.TriggerEvent(event="official/steps"))
async def steps(ctx: inngest.Context) -> int:
    for i in range(STEPS):
        await ctx.step.run(f"s{i}", _nothing)
    return STEPS


Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGI = Callable[[Scope, Receive, Send], Awaitable[None]]


class Recorder:
    """Writes what the app was sent, as it arrived, for the first RECORD_LIMIT POSTs."""

    def __init__(self, inner: ASGI, path: str) -> None:
        self.inner, self.left = inner, RECORD_LIMIT
        # one write per line, appended: the workers of one app share the file
        self.out = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or self.left <= 0:
            await self.inner(scope, receive, send)
            return
        self.left -= 1
        chunks: list[bytes] = []
        more = True
        while more:
            message = await receive()
            chunks.append(message.get("body", b""))
            more = bool(message.get("more_body"))
        body = b"".join(chunks)
        entry = {
            "query": scope["query_string"].decode(),
            "headers": {k.decode(): v.decode() for k, v in scope["headers"]},
            "body": base64.b64encode(body).decode(),
        }
        os.write(self.out, (json.dumps(entry) + "\n").encode())
        replayed = False

        async def again() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.inner(scope, again, send)


fastapi_app = FastAPI()
inngest.fast_api.serve(fastapi_app, client, [steps])
_record = os.environ.get("BENCH_RECORD")
app: Any = Recorder(fastapi_app, _record) if _record else fastapi_app
