"""The platform's HTTP API in-process (FastAPI's TestClient), on a fresh SQLite file."""

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from weir.app import create_app
from weir.platform.settings import Settings

APP_URL = "http://127.0.0.1:1/api/inngest"  # nothing listens: these tests never call the app
LOCAL = "http://localhost"  # TestClient's own "testserver" is not a host name Weir answers to


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    settings = Settings(database_url=f"sqlite:///{tmp_path}/weir.db", sqlite_synchronous="OFF")
    with TestClient(create_app(settings), base_url=LOCAL) as test_client:
        yield test_client


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
