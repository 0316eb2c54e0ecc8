"""Weir's web UI: server-rendered pages (Jinja2) with a little vanilla JavaScript.

`weir.web.ui.mount(app)` adds the pages under `/`, their polling JSON under `/ui/api/`, and
the static files under `/static/`; the API paths (/e/, /fn/, /v0/, /v1/, /health) are left as
they are.
"""
