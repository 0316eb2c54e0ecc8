"""Settings that keep one app from starving the others: flags and WEIR_* variables."""

import pytest
from weir.platform import cli


def settings(argv: list[str]) -> cli.Settings:
    return cli.settings_from(cli._parser().parse_args(argv))


def test_the_sync_timeout_is_short_by_default_and_configurable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert settings(["dev"]).sync_timeout_s == 15.0
    assert settings(["dev", "--sync-timeout", "2.5"]).sync_timeout_s == 2.5
    monkeypatch.setenv("WEIR_SYNC_TIMEOUT", "4")
    assert settings(["start"]).sync_timeout_s == 4.0
