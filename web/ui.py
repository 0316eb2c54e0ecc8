"""Mounting the UI on the server's app: its routers, static files and error pages."""

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles
from weir.web import api, errors, lane_pages, pages, webhook_pages
from weir.web.forms import actions, login
from weir.web.forms import capacity as capacity_actions
from weir.web.forms import pause as pause_actions
from weir.web.render import HERE


def mount(app: FastAPI) -> None:
    routers = (
        api.router,
        actions.router,
        capacity_actions.router,
        pause_actions.router,
        lane_pages.router,
    )
    for router in (*routers, webhook_pages.router, login.router, pages.router):
        app.include_router(router)
    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")
    errors.install(app)
