"""Moving an app to a new URL (PATCH /v1/apps/{name}) is all or nothing: when the URL serves
another app, the move answers 409 and that other app is not registered either. Real processes
on loopback: `weir dev` and two apps of Weir's SDK, each its own uvicorn."""

from pathlib import Path

import httpx
import pytest

from tests.integration.harness import SDKS, AppServer, WeirServer, store_rows

pytestmark = pytest.mark.integration


def test_a_move_to_a_url_serving_another_app_registers_nothing(tmp_path: Path) -> None:
    weir = WeirServer(tmp_path)
    weir.start()
    alpha = AppServer(tmp_path, SDKS["weir"], "alpha", weir.url)
    beta = AppServer(tmp_path, SDKS["weir"], "beta", weir.url)
    try:
        alpha.start()
        beta.start()
        alpha.sync()
        before = store_rows(weir.database_url, "SELECT slug, archived FROM functions")
        resp = httpx.patch(f"{weir.url}/v1/apps/alpha", json={"url": beta.url}, timeout=60)
        assert resp.status_code == 409, resp.text
        apps = store_rows(weir.database_url, "SELECT name, url FROM apps")
        assert [tuple(row) for row in apps] == [("alpha", alpha.url)]
        error = resp.json()["error"]
        assert "calls itself 'beta'" in error and "nothing of it was registered" in error
        after = store_rows(weir.database_url, "SELECT slug, archived FROM functions")
        assert sorted(map(tuple, after)) == sorted(map(tuple, before))
        # the same URL still syncs as itself, and a move of alpha to its own URL goes through
        beta.sync()
        names = {row[0] for row in store_rows(weir.database_url, "SELECT name FROM apps")}
        assert names == {"alpha", "beta"}
        back = httpx.patch(f"{weir.url}/v1/apps/alpha", json={"url": alpha.url}, timeout=60)
        assert back.status_code == 200, back.text
    finally:
        alpha.stop()
        beta.stop()
        weir.stop()
