"""Security headers on every response: the UI can't be framed (clickjacking), its pages run only
Weir's own script and styles, browsers don't guess content types, and no URL (run ids, event
data in query strings) leaks to other sites through the Referer header. Nothing but the static
files may be cached (`no-store`): a logged-in page or an API answer holds run data and CSRF
tokens, which a shared or back-button cache would show to whoever uses the browser next."""

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

# The UI's templates load /static/app.js and /static/app.css only; the timeline bars' sizes are
# inline style attributes (no inline <style> or <script> anywhere).
UI_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; style-src-attr 'unsafe-inline'; "
    "img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; "
    "base-uri 'none'; object-src 'none'"
)
# FastAPI's /docs and /redoc pages load their bundle from a CDN and start it with inline script.
DOCS_POLICY = (
    "default-src 'self'; script-src 'self' 'unsafe-inline' https://cdn.jsdelivr.net; "
    "style-src 'self' 'unsafe-inline' https://cdn.jsdelivr.net https://fonts.googleapis.com; "
    "font-src https://fonts.gstatic.com; img-src 'self' data: https:; worker-src blob:; "
    "frame-ancestors 'none'; base-uri 'none'; object-src 'none'"
)
DOCS_PATHS = ("/docs", "/redoc")
CACHEABLE_PREFIX = "/static/"
COMMON = {
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",  # frame-ancestors for browsers that predate it
    # not no-referrer: under it browsers send `Origin: null` even on the UI's own form posts
    "referrer-policy": "same-origin",
    "cross-origin-opener-policy": "same-origin",
    "cross-origin-resource-policy": "same-origin",
}


class SecurityHeaders:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        policy = DOCS_POLICY if scope["path"].startswith(DOCS_PATHS) else UI_POLICY
        no_store = not scope["path"].startswith(CACHEABLE_PREFIX)

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in COMMON.items():
                    headers.setdefault(name, value)
                headers.setdefault("content-security-policy", policy)
                if no_store:
                    headers.setdefault("cache-control", "no-store")
            await send(message)

        await self.app(scope, receive, send_with_headers)
