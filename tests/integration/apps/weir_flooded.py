"""Three functions behind rolling windows of 5, 10 and 20 runs per second, doing nothing
else: a flood of their events keeps every window's backlog full, so each should start exactly
its limit in any second (the rolling-window audit)."""

import os

from fastapi import FastAPI
from weir.sdk import Context, RollingWindow, Weir, serve

weir = Weir(os.environ.get("APP_ID", "flooded"))

LIMITS = {"w5": 5, "w10": 10, "w20": 20}  # function slug -> starts per second


def _declare(slug: str, limit: int) -> None:
    @weir.function(slug, event=f"flood/{slug}", rolling_window=RollingWindow(limit, "1s"))
    async def run(ctx: Context) -> None:
        return None


for _slug, _limit in LIMITS.items():
    _declare(_slug, _limit)


app = FastAPI()
serve(app, weir)
