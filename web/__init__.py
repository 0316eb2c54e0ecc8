"""Weir's web UI: server-rendered pages (Jinja2) with a little vanilla JavaScript.

`mount(app)` adds the pages under `/`, their polling JSON under `/ui/api/`, and the static
files under `/static/`; the API paths (/e/, /fn/, /v0/, /v1/, /health) are left as they are.
"""

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles


def mount(app: FastAPI) -> None:
    from weir.web import actions, api, errors, login, pages
    from weir.web.render import HERE

    for router in (api.router, actions.router, login.router, pages.router):
        app.include_router(router)
    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")
    errors.install(app)
