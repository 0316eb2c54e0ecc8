"""The ASGI application: the API routers around one Platform, started with the server."""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from weir.platform.api import events, gql, health, register, v1
from weir.platform.clock import Clock
from weir.platform.service import Platform
from weir.platform.settings import Settings


def create_app(settings: Settings, clock: Clock | None = None) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        weir = Platform(settings, clock)
        app.state.platform = weir
        await weir.start()
        try:
            yield
        finally:
            await weir.stop()

    app = FastAPI(title="Weir", lifespan=lifespan)
    for router in (health.router, events.router, register.router, v1.router, gql.router):
        app.include_router(router)
    return app
