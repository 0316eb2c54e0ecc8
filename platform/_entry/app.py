"""The whole server: the API routers and the web UI around one Platform, and the `weir`
command that serves it. The one module that sees both weir.platform and weir.web, so that
neither imports the other."""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from weir.platform.api import (
    actions,
    capacity,
    connect,
    events,
    gql,
    health,
    lists,
    memo_api,
    pauses,
    register,
    signals,
    simulate,
    v1,
    webhook_sources,
    webhooks,
)
from weir.platform.api import fifo_lanes as lanes
from weir.platform.api.metrics import router as metrics_router
from weir.platform.cli import banner
from weir.platform.cli import main as cli
from weir.platform.foundation.clock import Clock
from weir.platform.security import auth
from weir.platform.security.budget import BodyBudget
from weir.platform.security.guard import RequestGuard
from weir.platform.security.headers import SecurityHeaders
from weir.platform.service import Platform
from weir.platform.settings import Settings
from weir.web import ui


def create_app(settings: Settings, clock: Clock | None = None) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        weir = Platform(settings, clock)
        app.state.platform = weir
        app.state.before_shutdown = weir.drain_connect  # the CLI's server runs it on SIGTERM
        await weir.start()
        await banner.announce(weir)
        try:
            yield
        finally:
            await weir.stop()

    app = FastAPI(title="Weir", lifespan=lifespan)
    routers = (
        health.router,
        events.router,
        register.router,
        v1.router,
        lists.router,
        simulate.router,
        actions.router,
        capacity.router,
        pauses.router,
        signals.router,
        lanes.router,
        memo_api.router,
        gql.router,
        connect.router,
        webhooks.router,
        webhook_sources.router,
    )
    for router in routers:
        app.include_router(router)
    app.include_router(metrics_router)
    ui.mount(app)  # the UI: pages under /, their JSON under /ui/api/
    auth.install(app, settings, clock)  # start mode: every route but the open ones needs a login
    app.add_middleware(BodyBudget, limit_bytes=settings.body_budget_bytes)
    # outermost last: every answer carries the security headers, and foreign requests are
    # refused before auth or any route sees them
    app.add_middleware(RequestGuard, settings=settings)
    app.add_middleware(SecurityHeaders)
    return app


def main() -> None:
    """The `weir` command (and `python -m weir`)."""
    cli.main(make_app=create_app)
