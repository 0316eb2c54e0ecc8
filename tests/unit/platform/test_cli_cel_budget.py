"""The CEL evaluation budget: flags and WEIR_* variables, checked before anything starts."""

from pathlib import Path

import pytest
from weir.expressions import Budget, configure_budget, current_budget
from weir.platform.cli import main as cli
from weir.platform.service import Platform
from weir.platform.settings import Settings


def budget(argv: list[str]) -> Budget:
    return cli.settings_from(cli._parser().parse_args(argv)).cel_budget


def test_the_defaults_are_the_built_in_budget() -> None:
    assert budget(["dev"]) == Budget()


def test_flags_set_each_part_in_its_unit() -> None:
    argv = ["start", "--cel-budget-ms", "50", "--cel-memory-mib", "256"]
    argv += ["--cel-result-kib", "8", "--cel-workers", "3"]
    assert budget(argv) == Budget(
        time_ms=50, memory_bytes=256 << 20, result_bytes=8 << 10, workers=3
    )


def test_variables_set_them_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WEIR_CEL_BUDGET_MS", "75")
    monkeypatch.setenv("WEIR_CEL_WORKERS", "1")
    assert budget(["dev"]) == Budget(time_ms=75, workers=1)


@pytest.mark.parametrize("value", ["0", "-5", "abc", "1.5"])
def test_a_part_that_is_no_positive_whole_number_is_refused_naming_it(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        budget(["dev", "--cel-budget-ms", value])
    error = capsys.readouterr().err
    assert f"argument --cel-budget-ms: '{value}' is not a whole number of at least 1" in error


def test_a_bad_variable_is_refused_like_a_bad_flag(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("WEIR_CEL_WORKERS", "many")
    with pytest.raises(SystemExit):
        budget(["start"])
    assert "--cel-workers: 'many' is not a whole number" in capsys.readouterr().err


def test_the_platform_evaluates_under_its_settings_budget(tmp_path: Path) -> None:
    mine = Budget(time_ms=33, workers=1)
    previous = configure_budget(Budget())
    try:
        Platform(Settings(database_url=f"sqlite:///{tmp_path}/w.db", cel_budget=mine))
        assert current_budget() == mine
    finally:
        configure_budget(previous)
