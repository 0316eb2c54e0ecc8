"""Official-SDK functions served by `inngest.tornado`, on Tornado's own HTTP server (Tornado
apps are not ASGI): `python -m tests.integration.apps.inngest_tornado PORT`."""

import asyncio
import sys

import inngest.tornado
import tornado.web

from tests.integration.apps.inngest_sync_functions import FUNCTIONS, client


async def main(port: int) -> None:
    app = tornado.web.Application()
    inngest.tornado.serve(app, client, FUNCTIONS)
    app.listen(port, address="127.0.0.1")
    await asyncio.Event().wait()  # until the test stops the process


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1])))
