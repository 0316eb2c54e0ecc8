"""What `weir dev` says and does while starting: its banner, quiet migrations, and syncs of
apps that are not up yet, which back off instead of hammering."""

import time
from pathlib import Path

import pytest

from tests.integration.harness import WeirServer, free_port, wait_until

pytestmark = pytest.mark.integration


def test_banner_names_ui_database_and_apps_and_migrations_are_quiet(tmp_path: Path) -> None:
    app_url = f"http://127.0.0.1:{free_port()}/api/inngest"
    server = WeirServer(tmp_path, "-u", app_url)
    server.start()
    server.stop()
    log = server.log.read_text()
    assert f"UI        {server.url}" in log
    assert f"database  sqlite:///{server.db}" in log
    assert f"apps      {app_url} (syncing)" in log
    assert "alembic" not in log


def test_debug_shows_the_migrations(tmp_path: Path) -> None:
    server = WeirServer(tmp_path, "--log-level", "debug")
    server.start()
    server.stop()
    assert "Running upgrade" in server.log.read_text()


def test_sync_at_start_backs_off(tmp_path: Path) -> None:
    app_url = f"http://127.0.0.1:{free_port()}/api/inngest"  # nothing listens there
    server = WeirServer(tmp_path, "-u", app_url)
    server.start()
    failures = f"sync of {app_url} failed"
    wait_until(lambda: failures in server.log.read_text())
    time.sleep(5)
    server.stop()
    # retried twice a second this would be ~10 attempts; doubling from 0.5 s it is 4 or 5
    assert 3 <= server.log.read_text().count(failures) <= 5
