"""The official SDK's twin of weir_traced.py's `quick`: requests journaled and traced by the
app's own OpenTelemetry middleware (traced_middleware.py)."""

import os

import inngest
import inngest.fast_api
from fastapi import FastAPI

from tests.integration.apps.traced_middleware import instrument

client = inngest.Inngest(app_id=os.environ.get("APP_ID", "inngesttraced"))


@client.create_function(fn_id="quick", trigger=inngest.TriggerEvent(event="t/quick"), retries=0)
async def quick(ctx: inngest.Context) -> int:
    return int(await ctx.step.run("one", lambda: 1))


app = FastAPI()
instrument(app)
inngest.fast_api.serve(app, client, [quick])
