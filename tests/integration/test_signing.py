"""Signed traffic: Weir signs every request with its signing key; apps in cloud mode (both
SDKs) verify it, and refuse a request signed with another key."""

from pathlib import Path
from typing import Any

import httpx
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


@pytest.mark.parametrize("sdk", sorted(SDKS))
def test_numbers_reach_signed_apps_exactly_and_unsendable_ones_are_refused_at_ingest(
    tmp_path: Path, sdk: str
) -> None:
    """1e20 used to be accepted and then fail the run (weir.sdk answered 401, blaming the
    signing key): canonical JSON sends it as 21 digits, an integer past 2^53."""
    weir = WeirServer(tmp_path, "--signing-key", KEY)
    app = AppServer(tmp_path, SDKS[sdk], f"numbers{sdk}", weir.url, signing_key=KEY)
    try:
        weir.start()
        app.start()
        app.sync()
        refused = httpx.post(f"{weir.url}/e/test", json={"name": "t/steps", "data": {"x": 1e20}})
        assert refused.status_code == 400
        assert refused.json()["error"].startswith("event 0: data.x is 1e+20")
        for x, a in ((1e21, 1e21), (0.5, 1.5), (2**53 - 2, 2**53 - 1)):
            run = weir.finished_run(weir.send("t/steps", {"x": x}))
            assert (run["status"], run["output"]["a"]) == ("Completed", a)
    finally:
        app.stop()
        weir.stop()
