"""Settings that keep one app from starving the others: flags and WEIR_* variables."""

import pytest
from weir.platform.cli import main as cli


def settings(argv: list[str]) -> cli.Settings:
    return cli.settings_from(cli._parser().parse_args(argv))


def test_the_sync_timeout_is_short_by_default_and_configurable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert settings(["dev"]).sync_timeout_s == 15.0
    assert settings(["dev", "--sync-timeout", "2.5"]).sync_timeout_s == 2.5
    monkeypatch.setenv("WEIR_SYNC_TIMEOUT", "4")
    assert settings(["start"]).sync_timeout_s == 4.0


def test_calls_per_app_default_to_half_the_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    assert settings(["dev"]).app_call_cap == 64
    assert settings(["dev", "--workers", "10"]).app_call_cap == 5
    assert settings(["dev", "--workers", "1"]).app_call_cap == 1
    assert settings(["dev", "--calls-per-app", "3"]).app_call_cap == 3
    monkeypatch.setenv("WEIR_CALLS_PER_APP", "7")
    assert settings(["start"]).app_call_cap == 7


def test_one_functions_share_leaves_a_quarter_of_its_apps_calls(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert settings(["dev"]).function_call_share == 48  # of 64
    assert settings(["dev", "--calls-per-app", "4"]).function_call_share == 3
    assert settings(["dev", "--calls-per-app", "2"]).function_call_share == 1
    assert settings(["dev", "--calls-per-app", "1"]).function_call_share == 1  # none to leave
    assert settings(["dev", "--calls-per-function", "10"]).function_call_share == 10
    assert settings(["dev", "--calls-per-function", "100"]).function_call_share == 64
    monkeypatch.setenv("WEIR_CALLS_PER_FUNCTION", "5")
    assert settings(["start"]).function_call_share == 5
