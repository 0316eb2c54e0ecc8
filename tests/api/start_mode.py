"""Start mode (`weir start`) for the auth tests: its settings, credentials and login."""

import re
from pathlib import Path

from fastapi.testclient import TestClient
from weir.platform.settings import Settings

# strong enough for `weir start` (security/strength.py), as a real deployment's must be
SIGNING_KEY = "signkey-prod-" + "0e4f8a2c6b1d9e3f7a5c" * 3 + "1b2d"
EVENT_KEY = "9a3f1e7c5b2d8046e1f3a5c7b9d2e4f6"
TOKEN = "Lh4tQ8zX2mVn6pRw9sKy3bJd"
USER, PASSWORD = "ops", "correct horse battery staple"


def start_settings(tmp_path: Path, **extra: object) -> Settings:
    return Settings(
        database_url=f"sqlite:///{tmp_path}/weir.db",
        sqlite_synchronous="OFF",
        dev=False,
        event_keys=(EVENT_KEY,),
        signing_keys=(SIGNING_KEY,),
        admin_token=TOKEN,
        admin_user=USER,
        admin_password=PASSWORD,
        **extra,  # type: ignore[arg-type]
    )


def login(client: TestClient, password: str = PASSWORD, next: str = "/events") -> str:
    resp = client.post("/login", data={"user": USER, "password": password, "next": next})
    assert resp.status_code == 303, resp.text
    return str(resp.headers["location"])


def csrf_of(html: str) -> str:
    match = re.search(r'<meta name="csrf-token" content="([^"]+)">', html)
    assert match, "the page carries no CSRF token"
    return match.group(1)
