"""The flags of OpenTelemetry trace export (observability/otel.py): off unless asked for;
where the traces go is said by the standard OTEL_* variables."""

import argparse
import os
from typing import Any

from weir.platform.cli.target import at_least_one
from weir.platform.observability import otel


def _on(name: str) -> bool:
    return os.environ.get(f"WEIR_{name}", "").strip().lower() in ("1", "true", "yes", "on")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--otel",
        action="store_true",
        default=_on("OTEL"),
        help="send each finished run's trace over OTLP to OTEL_EXPORTER_OTLP_ENDPOINT "
        "(OTEL_* variables configure it) [WEIR_OTEL]",
    )
    p.add_argument(
        "--otel-payloads",
        action="store_true",
        default=_on("OTEL_PAYLOADS"),
        help="spans carry the run's output too, not only its size [WEIR_OTEL_PAYLOADS]",
    )
    p.add_argument(
        "--otel-queue",
        type=at_least_one,
        default=os.environ.get("WEIR_OTEL_QUEUE", str(otel.QUEUE_RUNS)),  # argparse checks it
        help="finished runs waiting for export at most; past it their traces are dropped "
        f"and counted (default {otel.QUEUE_RUNS}) [WEIR_OTEL_QUEUE]",
    )


def settings_of(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "otel": args.otel,
        "otel_payloads": args.otel_payloads,
        "otel_queue": args.otel_queue,
    }


def problem(args: argparse.Namespace) -> str | None:
    """Why the export cannot run as configured (said before anything starts)."""
    if not args.otel:
        return None
    try:
        otel.protocol()
    except otel.OtelError as exc:
        return str(exc)
    return None
