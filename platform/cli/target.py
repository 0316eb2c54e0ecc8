"""The running Weir a CLI command talks to: `--base-url` and `--admin-token`, shared by
`weir sync` and `weir capacity`."""

import argparse
import os

DEFAULT_BASE_URL = "http://127.0.0.1:8288"


def add_target_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--base-url",
        default=os.environ.get("WEIR_BASE_URL") or DEFAULT_BASE_URL,
        help=f"the running Weir [WEIR_BASE_URL] (default: {DEFAULT_BASE_URL})",
    )
    p.add_argument(
        "--admin-token",
        default=os.environ.get("WEIR_ADMIN_TOKEN"),
        help="the Weir's admin token when it runs `weir start` [WEIR_ADMIN_TOKEN]",
    )


def target(args: argparse.Namespace) -> tuple[str, dict[str, str]]:
    """The Weir's base URL and the headers that authenticate to it."""
    base = str(args.base_url).rstrip("/")
    headers = {"authorization": f"Bearer {args.admin_token}"} if args.admin_token else {}
    return base, headers
