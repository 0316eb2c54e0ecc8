"""What makes the CLI explain itself: `--version`, defaults in `--help`, each mode listing only
its own options, a clear word when a port is taken, and migrations quiet below debug."""

import argparse
import errno
import logging
import socket
import sys
from collections.abc import Sequence

import httpx
from weir import __version__
from weir.platform.settings import local_host

# Options that mean something in one mode only: hidden from the other's --help, and refused
# there when typed (a variable set for both modes stays harmless).
ONLY_IN = {
    "start": ("--event-key", "--admin-token", "--admin-user", "--admin-password"),
    "dev": ("--example",),
}
# Defaults --help must never print: they may come from WEIR_* variables holding secrets.
SECRETS = frozenset({"signing_key", "event_key", "admin_token", "admin_password"})
PROBE_TIMEOUT_S = 5.0  # a Weir still starting answers once its startup is done
BACKLOG = 2048  # uvicorn's default


class DefaultsFormatter(argparse.HelpFormatter):
    """Appends `(default: ...)` to an option's help when it has a default worth showing."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        unshown = (
            default is None or default is False or default == [] or default is argparse.SUPPRESS
        )
        if unshown or action.dest in SECRETS or "%(default)" in text or not action.option_strings:
            return action.help
        return f"{text} (default: %(default)s)"


def extend(parser: argparse.ArgumentParser) -> None:
    """Adds --version and, on each mode's subcommand, shown defaults and only its own options."""
    parser.add_argument("--version", action="version", version=f"weir {__version__}")
    for mode, sub in _modes(parser).items():
        sub.formatter_class = DefaultsFormatter
        for other, options in ONLY_IN.items():
            if other != mode:
                _hide(sub, options)


def parse(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """parse_args, then refuse an option typed for the mode it does not apply to."""
    tokens = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(tokens)
    sub = _modes(parser).get(args.command)
    for mode, options in ONLY_IN.items():
        if sub is None or mode == args.command:
            continue
        typed = [o for o in options if _typed(o, tokens, sub)]
        if typed:
            sub.error(f"{', '.join(typed)} only applies to `weir {mode}`")
    return args


def _modes(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            choices: dict[str, argparse.ArgumentParser] = action.choices
            return {m: p for m, p in choices.items() if m in ("dev", "start")}
    return {}


def _hide(parser: argparse.ArgumentParser, options: Sequence[str]) -> None:
    for action in parser._actions:
        if set(action.option_strings) & set(options):
            action.help = argparse.SUPPRESS


def _typed(option: str, tokens: list[str], parser: argparse.ArgumentParser) -> bool:
    """Whether the command line names `option`, also as `--opt=value` or a unique prefix."""
    known = [s for a in parser._actions for s in a.option_strings if s.startswith("--")]
    for token in tokens:
        head = token.split("=", 1)[0]
        if not head.startswith("--") or len(head) < 3:
            continue
        if head == option or [s for s in known if s.startswith(head)] == [option]:
            return True
    return False


def quiet_migrations(level: str) -> None:
    """Alembic's INFO lines (context impl, each revision) only matter when debugging."""
    logging.getLogger("alembic").setLevel(logging.NOTSET if level == "debug" else logging.WARNING)


def claim_port(host: str, port: int) -> socket.socket:
    """The socket Weir will serve on, bound first: uvicorn opens the database and syncs apps
    (its startup) before it binds, so a busy port must be found here. Exits with the reason."""
    bound = _bind(host, port)
    if isinstance(bound, socket.socket):
        # listening at once: a second Weir binding (SO_REUSEADDR) now fails, as it would not
        # against a socket that is only bound; connections wait in the backlog until we serve
        bound.listen(BACKLOG)
        return bound
    if bound.errno == errno.EADDRINUSE:
        sys.exit(_busy_message(host, port))
    sys.exit(f"weir cannot listen on {host}:{port}: {bound.strerror or bound}")


def example_port_problem(port: int) -> str | None:
    bound = _bind("127.0.0.1", port)
    if isinstance(bound, socket.socket):
        bound.close()  # the example app binds it itself a moment later
        return None
    return (
        f"weir dev --example: port {port}, where the example app listens, is in use (an "
        "example app still running from an earlier `make dev`?). Stop that program, or run "
        "without --example."
    )


def _bind(host: str, port: int) -> socket.socket | OSError:
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        sock = socket.socket(family, kind, proto)
    except OSError as exc:
        return exc
    # as uvicorn does, so a port left in TIME_WAIT by a stopped Weir counts as free
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError as exc:
        sock.close()
        return exc
    return sock


def _busy_message(host: str, port: int) -> str:
    url = f"http://{local_host(host)}:{port}"
    if is_weir(url):
        return (
            f"A Weir is already running at {url} (UI: {url}/runs); this one did not start "
            "and touched nothing. To add an app to the running one: `weir sync APP_URL` "
            f"(add `--base-url {url}` for another port), or its Apps page. To run a second "
            "Weir, pass --port (and its own --database-url)."
        )
    return (
        f"Port {port} on {host} is in use by another program, so weir cannot listen there. "
        "Pass --port (or set WEIR_PORT) to use another one."
    )


def is_weir(url: str) -> bool:
    try:
        body = httpx.get(f"{url}/health/live", timeout=PROBE_TIMEOUT_S).json()
    except (httpx.HTTPError, ValueError):
        return False
    return isinstance(body, dict) and body.get("service") == "weir"
