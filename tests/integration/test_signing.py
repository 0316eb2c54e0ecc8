"""Signed traffic: Weir signs every request with its signing key; apps in cloud mode (both
SDKs) verify it, and refuse a request signed with another key."""

from pathlib import Path
from typing import Any

import pytest

from tests.integration.harness import SDKS, AppServer, WeirServer

pytestmark = pytest.mark.integration
KEY = "signkey-test-" + "5e" * 32
OTHER = "signkey-test-" + "77" * 32


def _run_with_keys(tmp_path: Path, sdk: str, weir_key: str, app_key: str) -> dict[str, Any]:
    weir = WeirServer(tmp_path, "--signing-key", weir_key)
    app = AppServer(tmp_path, SDKS[sdk], f"signed{sdk}", weir.url, signing_key=app_key)
    try:
        weir.start()
        app.start()
        app.sync()
        return weir.finished_run(weir.send("t/steps", {"x": 1}))
    finally:
        app.stop()
        weir.stop()


@pytest.mark.parametrize("sdk", sorted(SDKS))
def test_signed_requests_are_accepted_by_cloud_mode_apps(tmp_path: Path, sdk: str) -> None:
    run = _run_with_keys(tmp_path, sdk, KEY, KEY)
    assert run["status"] == "Completed"
    assert run["output"] == {"a": 2, "b": ["first", "second"]}


@pytest.mark.parametrize("sdk", sorted(SDKS))
def test_requests_signed_with_another_key_are_refused(tmp_path: Path, sdk: str) -> None:
    run = _run_with_keys(tmp_path, sdk, OTHER, KEY)
    assert run["status"] == "Failed"
    assert run["steps"] == []
    assert run["output"]["name"] == "Unauthorized"
    assert "signing key" in run["output"]["message"]
