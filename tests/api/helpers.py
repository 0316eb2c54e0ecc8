"""Shared by the API tests: sync bodies for functions nobody calls, and the store's rows."""

from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import create_engine, text

APP_URL = "http://127.0.0.1:1/api/inngest"  # nothing listens: these tests never call the app
LOCAL = "http://localhost"  # TestClient's own "testserver" is not a host name Weir answers to


def function(fn_id: str, event: str = "t/e", **options: Any) -> dict[str, Any]:
    slug = f"app-{fn_id}"
    url = f"{APP_URL}?fnId={slug}&stepId=step"
    step = {"id": "step", "name": "step", "runtime": {"type": "http", "url": url}}
    return {
        "id": slug,
        "name": fn_id,
        "triggers": [{"event": event}],
        "steps": {"step": step},
        **options,
    }


def sync_body(*functions: dict[str, Any]) -> dict[str, Any]:
    return {
        "appname": "app",
        "url": APP_URL,
        "sdk": "py:v0.1.0",
        "framework": "fast_api",
        "v": "0.1",
        "deploy_type": "ping",
        "functions": list(functions),
    }


def store_rows(client: TestClient, sql: str) -> list[tuple[Any, ...]]:
    """Rows of one query on the store of the platform behind `client`, SQLite or PostgreSQL,
    over a connection of the test's own: what is really committed."""
    url = client.app.state.platform.settings.database_url  # type: ignore[attr-defined]
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return [tuple(row) for row in conn.execute(text(sql))]
    finally:
        engine.dispose()
