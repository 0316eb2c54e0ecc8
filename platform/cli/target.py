"""The running Weir a CLI command talks to, and its login: `--base-url`, then `--admin-token`,
or `--admin-user` with the password from WEIR_ADMIN_PASSWORD or typed when asked (never on
the command line, where other users of the machine and the shell's history would see it).
Shared by `weir sync`, `weir capacity` and `weir lanes`, whose requests go to the REST API,
which takes the token as Bearer and the user's password as HTTP Basic (security/auth.py)."""

import argparse
import base64
import getpass
import os
import sys

DEFAULT_BASE_URL = "http://127.0.0.1:8288"
PASSWORD_VARIABLE = "WEIR_ADMIN_PASSWORD"
LOGIN_HINT = (
    "pass --admin-token (or WEIR_ADMIN_TOKEN), or --admin-user (or WEIR_ADMIN_USER) with the "
    f"password in {PASSWORD_VARIABLE} or typed when asked"
)


class NoLogin(SystemExit):
    """The login cannot be completed (no password and no terminal to ask on)."""


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
    p.add_argument(
        "--admin-user",
        default=os.environ.get("WEIR_ADMIN_USER"),
        help=(
            "log in as this user of a `weir start` with --admin-user/--admin-password "
            f"[WEIR_ADMIN_USER]; the password comes from {PASSWORD_VARIABLE}, else it is asked for"
        ),
    )


def target(args: argparse.Namespace) -> tuple[str, dict[str, str]]:
    """The Weir's base URL and the headers that authenticate to it (the token wins)."""
    base = str(args.base_url).rstrip("/")
    if args.admin_token:
        return base, {"authorization": f"Bearer {args.admin_token}"}
    if args.admin_user:
        password = os.environ.get(PASSWORD_VARIABLE) or _ask(args.admin_user, base)
        pair = base64.b64encode(f"{args.admin_user}:{password}".encode()).decode()
        return base, {"authorization": f"Basic {pair}"}
    return base, {}


def _ask(user: str, base: str) -> str:
    if not sys.stdin.isatty():
        raise NoLogin(
            f"--admin-user {user}: set {PASSWORD_VARIABLE}, or run on a terminal to type the "
            "password"
        )
    password = getpass.getpass(f"Password of {user} at {base}: ")
    if not password:
        raise NoLogin("no password typed")
    return password


def at_least_one(text: str) -> int:
    """An argparse type: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of at least 1")
    return value
