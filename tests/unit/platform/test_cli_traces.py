"""Trace export's flags and the OTEL_* protocol, checked before anything starts."""

import subprocess
import sys

import pytest
from weir.platform.cli import main as cli
from weir.platform.cli import traces as cli_traces
from weir.platform.observability import otel
from weir.platform.settings import Settings


def _args(argv: list[str]) -> Settings:
    return cli.settings_from(cli._parser().parse_args(argv))


def test_export_is_off_by_default_and_on_by_flag_or_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert not _args(["dev"]).otel
    on = _args(["start", "--otel", "--otel-payloads", "--otel-queue", "5"])
    assert (on.otel, on.otel_payloads, on.otel_queue) == (True, True, 5)
    monkeypatch.setenv("WEIR_OTEL", "1")
    monkeypatch.setenv("WEIR_OTEL_QUEUE", "7")
    by_env = _args(["dev"])
    assert (by_env.otel, by_env.otel_queue) == (True, 7)


@pytest.mark.parametrize("value", ["0", "-1", "many"])
def test_a_queue_of_no_whole_positive_size_is_refused(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        _args(["dev", "--otel-queue", value])
    assert "--otel-queue" in capsys.readouterr().err


def test_both_otlp_protocols_build_their_exporter(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
    assert type(otel.otlp_exporter()).__module__.endswith("grpc.trace_exporter")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf")  # wins
    assert type(otel.otlp_exporter()).__module__.endswith("http.trace_exporter")


def test_an_unknown_protocol_stops_weir_at_start_saying_which_are_known() -> None:
    env = {"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json", "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-m", "weir", "dev", "--otel", "--port", "1"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert "http/json" in done.stderr and "http/protobuf, grpc" in done.stderr
    parsed = cli._parser().parse_args(["dev"])
    assert cli_traces.problem(parsed) is None  # off: the variables are not read at all


def test_the_service_is_weir_unless_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OTEL_SERVICE_NAME", raising=False)
    monkeypatch.delenv("OTEL_RESOURCE_ATTRIBUTES", raising=False)
    assert otel.resource().attributes["service.name"] == "weir"
    monkeypatch.setenv("OTEL_SERVICE_NAME", "orders-weir")
    assert otel.resource().attributes["service.name"] == "orders-weir"
