"""docs/operations.md lists every flag `weir dev` and `weir start` take, with its variable."""

import argparse
from pathlib import Path

import pytest
from weir.platform.cli import main as cli

OPERATIONS = Path(__file__).resolve().parents[2] / "docs" / "operations.md"


def _flags(command: str) -> list[str]:
    parser = cli._parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    actions = sub.choices[command]._actions
    return [a.option_strings[-1] for a in actions if a.option_strings and a.dest != "help"]


@pytest.mark.parametrize("command", ["dev", "start"])
def test_every_flag_is_in_the_settings_table(command: str) -> None:
    text = OPERATIONS.read_text()
    missing = [flag for flag in _flags(command) if f"`{flag}" not in text]
    assert not missing, f"docs/operations.md does not document {missing}"


@pytest.mark.parametrize(("command", "action"), [("lanes", "list"), ("lanes", "show")])
def test_every_flag_of_the_operator_commands_is_documented(command: str, action: str) -> None:
    parser = cli._parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    inner = sub.choices[command]
    actions = next(a for a in inner._actions if isinstance(a, argparse._SubParsersAction))
    flags = [
        a.option_strings[-1]
        for a in actions.choices[action]._actions
        if a.option_strings and a.dest != "help"
    ]
    missing = [flag for flag in flags if f"`{flag}" not in OPERATIONS.read_text()]
    assert not missing, f"docs/operations.md does not document {missing} of weir {command}"
