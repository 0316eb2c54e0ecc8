"""The start banner: where the UI is, which database holds the data, which apps are synced,
where step.ai.infer may send model requests and which apps Connect workers may serve, so a
first `weir dev` says what it is doing (one JSON line in `weir start`)."""

import logging
from pathlib import Path
from typing import Any

from sqlalchemy.engine import make_url
from weir import __version__
from weir.platform.connect import binding as connect_binding
from weir.platform.executor import ai_hosts
from weir.platform.service import Platform
from weir.platform.settings import Settings, local_host
from weir.platform.store.records import catalog

log = logging.getLogger("weir")


async def announce(weir: Platform) -> None:
    apps = await weir.read(catalog.list_apps)
    fields = facts(weir.settings, [(a.name, a.url) for a in apps])
    if weir.settings.log_format == "json":
        log.info("weir is serving", extra={"fields": fields})
    else:
        said = text_lines(fields)  # each line a value: an app's name cannot break a line
        log.info("\n".join(["%s"] * len(said)), *said)


def facts(settings: Settings, synced: list[tuple[str, str]]) -> dict[str, Any]:
    host = local_host(settings.host)
    known = {url for _, url in synced}
    return {
        "version": __version__,
        "mode": "dev" if settings.dev else "start",
        "ui": f"http://{host}:{settings.port}",
        "database": shown_database(settings.database_url),
        "apps": [f"{name} at {url}" for name, url in synced],
        "syncing": [url for url in settings.app_urls if url not in known],
        "ai_calls": ai_hosts.describe(ai_hosts.policy(settings.allowed_ai_hosts, dev=settings.dev)),
        "connect": connect_binding.policy(settings.connect_apps, dev=settings.dev).describe(),
    }


def text_lines(fields: dict[str, Any]) -> list[str]:
    apps = fields["apps"] + [f"{url} (syncing)" for url in fields["syncing"]]
    return [
        f"Weir {fields['version']} ({fields['mode']}) is starting",
        f"  UI        {fields['ui']}",
        f"  database  {fields['database']}",
        f"  apps      {'; '.join(apps) if apps else 'none yet'}",
        f"  AI calls  {fields['ai_calls']}",
        f"  Connect   {fields['connect']}",
        f"  add one   weir sync APP_URL   (or {fields['ui']}/apps)",
    ]


def shown_database(url: str) -> str:
    """The URL without its password, and a relative SQLite path made absolute."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite":
        return parsed.render_as_string(hide_password=True)
    db = parsed.database or ""
    path = db if db in ("", ":memory:") else str(Path(db).resolve())
    return f"{parsed.drivername}:///{path}"
