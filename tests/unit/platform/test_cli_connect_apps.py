"""`--connect-apps` / WEIR_CONNECT_APPS: the apps Connect workers may serve reach the settings,
and a list that cannot mean anything stops Weir before it starts, saying why."""

import os
import subprocess
import sys

import pytest
from weir.platform.cli import banner
from weir.platform.cli import main as cli

from tests.integration.harness import ROOT


def settings(argv: list[str]) -> cli.Settings:
    return cli.settings_from(cli._parser().parse_args(argv))


def test_the_flag_and_its_variable_reach_the_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    flags = ["--connect-apps", "billing,reports", "--connect-apps", "mail"]
    assert settings(["start", *flags]).connect_apps == ("billing", "reports", "mail")
    monkeypatch.setenv("WEIR_CONNECT_APPS", "a, b")
    assert settings(["dev"]).connect_apps == ("a", "b")
    assert settings(["dev", "--connect-apps", "c"]).connect_apps == ("c",)  # the flag wins


@pytest.mark.parametrize("command", ["dev", "start"])
def test_a_wildcard_beside_names_stops_weir_saying_why(command: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("WEIR_")}
    done = subprocess.run(
        [sys.executable, "-m", "weir", command, "--port", "0", "--connect-apps", "*,billing"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert done.stderr.strip().endswith(
        f"weir {command} refuses to run: --connect-apps '*' admits every app name; drop the "
        "names beside it (billing) or drop '*'"
    )


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["start"], "off: no app may connect (name them with --connect-apps)"),
        (["start", "--connect-apps", "b,a"], "only a, b (--connect-apps)"),
        (["dev"], "any app not served over HTTP"),
    ],
)
def test_the_start_banner_says_which_apps_may_connect(argv: list[str], said: str) -> None:
    facts = banner.facts(settings(argv), [])
    assert facts["connect"] == said
    assert f"  Connect   {said}" in banner.text_lines(facts)
