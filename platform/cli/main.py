"""`weir dev` and `weir start`: every setting as a flag and a WEIR_* environment variable."""

import argparse
import gc
import logging
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import uvicorn
from weir.expressions import Budget
from weir.platform.cli import capacity as cli_capacity_command
from weir.platform.cli import functions as cli_functions_command
from weir.platform.cli import lanes as cli_lanes_command
from weir.platform.cli import support as cli_support
from weir.platform.cli import sync as cli_sync_command
from weir.platform.cli import traces as cli_traces
from weir.platform.cli import webhooks as cli_webhooks_command
from weir.platform.cli.server import protocols
from weir.platform.cli.target import at_least_one
from weir.platform.connect import binding as connect_binding
from weir.platform.executor import ai_hosts, app_errors
from weir.platform.functions import parse_duration_ms
from weir.platform.observability import logs
from weir.platform.runtime.retention import MIN_KEEP_MS
from weir.platform.security import strength
from weir.platform.settings import Settings

EXAMPLE_PORT = 8000
RETENTION_START_MS = 30 * 24 * 3600 * 1000  # weir start keeps 30 days by default
# Builds the ASGI app for the settings: passed in by `weir.app`, which composes the API and
# the web UI above this package.
AppFactory = Callable[[Settings], Any]


def _env(name: str, default: str | None = None) -> str | None:
    return os.environ.get(f"WEIR_{name}", default)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="weir", description="Weir durable functions")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, helptext in (
        ("dev", "run locally: any event key, embedded SQLite"),
        ("start", "run for real: event keys and a signing key required"),
    ):
        _add_common(sub.add_parser(name, help=helptext, description=helptext))
    cli_sync_command.add_parser(sub)
    cli_capacity_command.add_parser(sub)
    cli_webhooks_command.add_parser(sub)
    cli_lanes_command.add_parser(sub)
    cli_functions_command.add_parser(sub)
    cli_support.extend(parser)
    return parser


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--host", default=_env("HOST", "127.0.0.1"), help="bind address [WEIR_HOST]")
    p.add_argument(
        "--port", type=int, default=int(_env("PORT", "8288") or 8288), help="port [WEIR_PORT]"
    )
    p.add_argument(
        "--database-url",
        default=_env("DATABASE_URL", "sqlite:///.weir/weir.db"),
        help="sqlite:///path.db or postgresql://... [WEIR_DATABASE_URL]",
    )
    p.add_argument(
        "-u",
        "--sdk-url",
        action=_Repeatable,
        default=_list("SDK_URLS"),
        help="an app's serve URL to sync; repeatable [WEIR_SDK_URLS, comma-separated]",
    )
    p.add_argument(
        "--signing-key",
        action=_Repeatable,
        default=_list("SIGNING_KEYS"),
        help="signing key; a second one is accepted as fallback [WEIR_SIGNING_KEYS]",
    )
    p.add_argument(
        "--event-key",
        action=_Repeatable,
        default=_list("EVENT_KEYS"),
        help="an accepted event key; repeatable [WEIR_EVENT_KEYS]",
    )
    p.add_argument(
        "--workers",
        type=int,
        default=int(_env("WORKERS", "128") or 128),
        help="calls to apps in flight at once [WEIR_WORKERS]",
    )
    p.add_argument(
        "--calls-per-app",
        type=int,
        default=int(_env("CALLS_PER_APP", "0") or 0),
        help="calls to one app in flight at once, so a hanging app cannot hold every worker "
        "(default: half of --workers) [WEIR_CALLS_PER_APP]",
    )
    p.add_argument(
        "--calls-per-function",
        type=int,
        default=int(_env("CALLS_PER_FUNCTION", "0") or 0),
        help="of an app's calls, those one of its functions may hold when it has others, so "
        "a hanging function leaves the rest to them (default: 3/4 of --calls-per-app) "
        "[WEIR_CALLS_PER_FUNCTION]",
    )
    p.add_argument(
        "--lease",
        type=float,
        default=float(_env("LEASE", "30") or 30),
        help="seconds a claimed item stays with its process unless renewed; a dead process's "
        "items (and concurrency slots) pass to the others after this [WEIR_LEASE]",
    )
    p.add_argument(
        "--retry-interval",
        type=float,
        default=_float("RETRY_INTERVAL"),
        help="fixed seconds between retries instead of the backoff table [WEIR_RETRY_INTERVAL]",
    )
    _add_auth(p)
    _add_operations(p)
    _add_http(p)
    _add_cel(p)
    cli_traces.add_arguments(p)
    p.add_argument(
        "--example",
        action="store_true",
        help=f"also start the example app on 127.0.0.1:{EXAMPLE_PORT} and sync it",
    )


def _add_auth(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--admin-token",
        default=_env("ADMIN_TOKEN"),
        help="start mode: a Bearer token for the UI, REST and GraphQL [WEIR_ADMIN_TOKEN]",
    )
    p.add_argument(
        "--admin-user", default=_env("ADMIN_USER"), help="start mode: UI login [WEIR_ADMIN_USER]"
    )
    p.add_argument(
        "--admin-password",
        default=_env("ADMIN_PASSWORD"),
        help="start mode: the password of --admin-user [WEIR_ADMIN_PASSWORD]",
    )
    p.add_argument(
        "--allowed-app-hosts",
        action=_RepeatableList,
        default=_list("ALLOWED_APP_HOSTS"),
        help="only sync apps on these hosts (host, host:port or *.domain); repeatable "
        "[WEIR_ALLOWED_APP_HOSTS, comma-separated]",
    )
    p.add_argument(
        "--allowed-ai-hosts",
        action=_RepeatableList,
        default=_list("ALLOWED_AI_HOSTS"),
        help="step.ai.infer may only call these hosts (host, host:port or *.domain: wherever "
        "they resolve) and addresses (10.1.2.3, 10.0.0.0/8, fd00::/8); without it `start` "
        "calls public addresses only; repeatable [WEIR_ALLOWED_AI_HOSTS, comma-separated]",
    )
    p.add_argument(
        "--connect-apps",
        action=_RepeatableList,
        default=_list("CONNECT_APPS"),
        help="the apps (by name) Connect workers may serve, '*' for any; never one synced over "
        "HTTP. Default: any in `dev`, none in `start`; repeatable [WEIR_CONNECT_APPS, "
        "comma-separated]",
    )
    p.add_argument(
        "--app-timeout",
        type=float,
        default=float(_env("APP_TIMEOUT", "7200") or 7200),
        help="seconds one call to an app may take [WEIR_APP_TIMEOUT]",
    )
    p.add_argument(
        "--sync-timeout",
        type=float,
        default=float(_env("SYNC_TIMEOUT", "15") or 15),
        help="seconds a sync (the PUT to the app's serve URL) may take [WEIR_SYNC_TIMEOUT]",
    )


def _add_operations(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--log-format",
        choices=("json", "text"),
        default=_env("LOG_FORMAT"),
        help="json: one JSON object per line (default of `start`); text (default of `dev`) "
        "[WEIR_LOG_FORMAT]",
    )
    p.add_argument(
        "--log-level",
        choices=("debug", "info", "warning", "error"),
        default=_env("LOG_LEVEL", "info"),
        help="debug also logs every event, call and completed step [WEIR_LOG_LEVEL]",
    )
    p.add_argument(
        "--shutdown-grace",
        type=float,
        default=float(_env("SHUTDOWN_GRACE", "10") or 10),
        help="on SIGTERM, seconds calls in flight may still finish before the rest is handed "
        "back to other processes [WEIR_SHUTDOWN_GRACE]",
    )
    p.add_argument(
        "--retention",
        type=_retention_ms,
        default=_env("RETENTION"),
        help="delete events and finished runs older than this, e.g. 30d or 12h; 0 keeps "
        "everything (default: 30d for `start`, 0 for `dev`) [WEIR_RETENTION]",
    )
    p.add_argument(
        "--paused-run-bound",
        type=_duration_ms,
        default=_env("PAUSED_RUN_BOUND", "7d"),
        help="a function paused in skip mode: its runs left waiting are cancelled after this "
        "long unless it is resumed, e.g. 7d or 12h [WEIR_PAUSED_RUN_BOUND]",
    )
    p.add_argument(
        "--sqlite-synchronous",
        choices=("FULL", "NORMAL", "OFF"),
        default=_env("SQLITE_SYNCHRONOUS", "FULL"),
        help="SQLite fsync policy; below FULL a power cut may lose acknowledged events "
        "[WEIR_SQLITE_SYNCHRONOUS]",
    )


def _add_http(p: argparse.ArgumentParser) -> None:
    """What keeps hostile browsers and slow or greedy clients from taking Weir down."""
    p.add_argument(
        "--allowed-hosts",
        action=_RepeatableList,
        default=_list("ALLOWED_HOSTS"),
        help="Host names Weir answers to besides localhost and IP addresses, e.g. its name "
        "behind a proxy (name or *.domain; * for any); repeatable [WEIR_ALLOWED_HOSTS]",
    )
    p.add_argument(
        "--max-connections",
        type=int,
        default=int(_env("MAX_CONNECTIONS", "1000") or 1000),
        help="open client connections at most; past it, the oldest one still sending its "
        "headers is dropped [WEIR_MAX_CONNECTIONS]",
    )
    p.add_argument(
        "--header-timeout",
        type=float,
        default=float(_env("HEADER_TIMEOUT", "10") or 10),
        help="seconds a client has to send a request's headers [WEIR_HEADER_TIMEOUT]",
    )
    p.add_argument(
        "--body-timeout",
        type=float,
        default=float(_env("BODY_TIMEOUT", "30") or 30),
        help="seconds a request body may take, plus one per 64 KiB received [WEIR_BODY_TIMEOUT]",
    )
    p.add_argument(
        "--body-budget",
        type=float,
        default=float(_env("BODY_BUDGET", "64") or 64),
        help="MiB of request bodies held at once over all requests; past it, 503 "
        "[WEIR_BODY_BUDGET]",
    )


# (flag, WEIR_* name, Budget field, unit in bytes or 1, help) of the CEL evaluation budget
_CEL_FLAGS = (
    ("--cel-budget-ms", "CEL_BUDGET_MS", "time_ms", 1, "ms one expression may evaluate"),
    ("--cel-memory-mib", "CEL_MEMORY_MIB", "memory_bytes", 1 << 20, "MiB per CEL worker"),
    ("--cel-result-kib", "CEL_RESULT_KIB", "result_bytes", 1 << 10, "KiB per CEL result"),
    ("--cel-workers", "CEL_WORKERS", "workers", 1, "processes for costly CEL evaluations"),
)


def _add_cel(p: argparse.ArgumentParser) -> None:
    """The budget each CEL evaluation runs under, so one hostile event cannot stall Weir."""
    base = Budget()
    for flag, env, attr, unit, text in _CEL_FLAGS:
        default = getattr(base, attr) // unit
        p.add_argument(
            flag,
            type=at_least_one,
            default=_env(env, str(default)),  # argparse converts (and checks) this text too
            help=f"{text} [WEIR_{env}]",
        )


def _cel(args: argparse.Namespace) -> Budget:
    values = {
        attr: getattr(args, flag[2:].replace("-", "_")) * unit
        for flag, _, attr, unit, _ in _CEL_FLAGS
    }
    return Budget(**values)


def _duration_ms(text: str) -> int:
    try:
        return parse_duration_ms(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _retention_ms(text: str) -> int:
    ms = _duration_ms(text)
    if 0 < ms < MIN_KEEP_MS:  # a batch or debounce window of seconds would lose its events
        raise argparse.ArgumentTypeError(
            f"{text!r} is shorter than the least retention, {MIN_KEEP_MS // 3_600_000}h "
            "(0 keeps everything)"
        )
    return ms


class _Repeatable(argparse.Action):
    """A flag that may be given several times, whose default is a WEIR_* variable's list: the
    flags given replace that list, as any flag wins over its variable (argparse's "append"
    would add to it, so `--signing-key new` would leave the variable's old key signing)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        given = getattr(namespace, self.dest)
        start = [] if given is self.default else list(given)
        setattr(namespace, self.dest, [*start, values])


class _RepeatableList(_Repeatable):
    """A repeatable flag whose every value may itself be a comma list, as its variable is:
    `--allowed-app-hosts a,b` is two hosts, not one named "a,b"."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        for part in _parts(str(values)):
            super().__call__(parser, namespace, part, option_string)


def _parts(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


def _list(name: str) -> list[str]:
    value = _env(name)
    return _parts(value) if value else []


def _float(name: str) -> float | None:
    value = _env(name)
    return float(value) if value else None


def settings_from(args: argparse.Namespace) -> Settings:
    settings = Settings(
        database_url=args.database_url,
        host=args.host,
        port=args.port,
        dev=args.command == "dev",
        app_urls=tuple(args.sdk_url),
        signing_keys=tuple(args.signing_key),
        event_keys=tuple(args.event_key),
        workers=args.workers,
        calls_per_app=args.calls_per_app or None,
        calls_per_function=args.calls_per_function or None,
        lease_ms=int(args.lease * 1000),
        retry_delay_ms=None if args.retry_interval is None else int(args.retry_interval * 1000),
        admin_token=args.admin_token,
        admin_user=args.admin_user,
        admin_password=args.admin_password,
        allowed_app_hosts=tuple(args.allowed_app_hosts),
        allowed_ai_hosts=tuple(args.allowed_ai_hosts),
        connect_apps=tuple(args.connect_apps),
        app_timeout_s=args.app_timeout,
        sync_timeout_s=args.sync_timeout,
    )
    return replace(
        settings,
        **_operations(args),
        **_http(args),
        **cli_traces.settings_of(args),
        cel_budget=_cel(args),
    )


def _http(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "allowed_hosts": tuple(args.allowed_hosts),
        "max_connections": args.max_connections,
        "header_timeout_s": args.header_timeout,
        "body_timeout_s": args.body_timeout,
        "body_budget_bytes": int(args.body_budget * 1024 * 1024),
    }


def _operations(args: argparse.Namespace) -> dict[str, Any]:
    dev = args.command == "dev"
    return {
        "log_format": args.log_format or ("text" if dev else "json"),
        "log_level": args.log_level,
        "shutdown_grace_s": args.shutdown_grace,
        "retention_ms": (RETENTION_START_MS if not dev else 0)
        if args.retention is None
        else args.retention,
        "sqlite_synchronous": args.sqlite_synchronous,
        "paused_run_bound_ms": args.paused_run_bound,
    }


def _start_problems(settings: Settings) -> list[str]:
    problems = []
    if not settings.event_keys:
        problems.append("no event key: pass --event-key KEY or set WEIR_EVENT_KEYS")
    if not settings.signing_keys:
        problems.append("no signing key: pass --signing-key KEY or set WEIR_SIGNING_KEYS")
    if bool(settings.admin_user) != bool(settings.admin_password):
        problems.append("--admin-user and --admin-password go together: set both or neither")
    if not (settings.admin_token or settings.admin_user):
        problems.append(
            "no admin login for the UI, REST and GraphQL APIs: pass --admin-token TOKEN or "
            "--admin-user USER --admin-password PASSWORD (or WEIR_ADMIN_*)"
        )
    return problems + _weak_secrets(settings)


def _weak_secrets(settings: Settings) -> list[str]:
    """Every secret of `weir start` too weak to face guessing (security/strength.py)."""
    secrets = [strength.Secret("a --signing-key", key) for key in settings.signing_keys]
    secrets += [strength.Secret("an --event-key", key) for key in settings.event_keys]
    if settings.admin_token:
        secrets.append(strength.Secret("--admin-token", settings.admin_token))
    if settings.admin_password:
        secrets.append(
            strength.Secret(
                "--admin-password",
                settings.admin_password,
                strength.PASSWORD_BITS,
                strength.PASSWORD_CHARS,
            )
        )
    return [p for p in map(strength.problem, secrets) if p is not None]


def _ai_hosts_problem(settings: Settings) -> str | None:
    try:
        ai_hosts.policy(settings.allowed_ai_hosts, dev=settings.dev)
    except ValueError as exc:
        return str(exc)
    return None


def _connect_apps_problem(settings: Settings) -> str | None:
    try:
        connect_binding.policy(settings.connect_apps, dev=settings.dev)
    except ValueError as exc:
        return str(exc)
    return None


def main(argv: Sequence[str] | None = None, *, make_app: AppFactory) -> None:
    args = cli_support.parse(_parser(), argv)
    if args.command == "sync":
        sys.exit(cli_sync_command.run(args))
    if args.command == "capacity":
        sys.exit(cli_capacity_command.run(args))
    if args.command == "webhooks":
        sys.exit(cli_webhooks_command.run(args))
    if args.command == "lanes":
        sys.exit(cli_lanes_command.run(args))
    if args.command == "functions":
        sys.exit(cli_functions_command.run(args))
    settings = settings_from(args)
    if problem := (
        _ai_hosts_problem(settings) or _connect_apps_problem(settings) or cli_traces.problem(args)
    ):
        sys.exit(f"weir {args.command} refuses to run: {problem}")
    if args.command == "start" and (problems := _start_problems(settings)):
        sys.exit("weir start refuses to run: " + "; ".join(problems))
    if bad_urls := [f"-u {p}" for url in settings.app_urls if (p := app_errors.url_problem(url))]:
        sys.exit(f"weir {args.command} refuses to run: " + "; ".join(bad_urls))
    if args.example and (problem := cli_support.example_port_problem(EXAMPLE_PORT)):
        sys.exit(problem)
    listener = cli_support.claim_port(settings.host, settings.port)  # or exit, touching nothing
    logs.configure(json_lines=settings.log_format == "json", level=settings.log_level)
    cli_support.quiet_migrations(settings.log_level)
    # uvicorn shuts down gracefully on SIGTERM (in-flight work finished or handed back), then
    # raises the signal again so the process ends by it: by then the exit is a clean one.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    signal.signal(signal.SIGINT, lambda *_: sys.exit(0))  # Ctrl-C, likewise: no traceback
    example = _start_example(settings) if args.example else None
    try:
        _serve(settings, listener, make_app)
    finally:
        if example is not None:
            example.terminate()


def _start_example(settings: Settings) -> "subprocess.Popen[bytes]":
    env = os.environ | {"WEIR_BASE_URL": f"http://{settings.host}:{settings.port}"}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "uvicorn",
            "weir.sdk.examples.demo:app",
            "--port",
            str(EXAMPLE_PORT),
            "--log-level",
            "warning",
        ],
        env=env,
    )
    url = f"http://127.0.0.1:{EXAMPLE_PORT}/api/inngest"
    object.__setattr__(settings, "app_urls", (*settings.app_urls, url))
    return proc


GC_THRESHOLDS = (50_000, 10, 10)  # young passes rarer; older ones every 10 young as ever


def _serve(settings: Settings, listener: socket.socket, make_app: AppFactory) -> None:
    config = uvicorn.Config(
        make_app(settings),
        host=settings.host,
        port=settings.port,
        **protocols(settings),  # header/body deadlines, connection caps, the frame cap
        log_level=settings.log_level,
        log_config=None,  # uvicorn's own lines go through Weir's handler (JSON in start mode)
        access_log=False,
    )
    server = _Server(config)
    # What exists by now (the modules, the app: some 180,000 objects) lives as long as the
    # process. Frozen, it is left out of the collector's full passes, which would otherwise
    # walk all of it (tens to hundreds of milliseconds, every request waiting) to free nothing.
    gc.freeze()
    # Every transition allocates thousands of short-lived objects (rows, records, dicts) that
    # reference counting frees; at the default threshold (700) the collector ran young passes
    # over them hundreds of times a second, about a tenth of the process's CPU. Weir makes few
    # reference cycles, so rarer passes free the same garbage a little later.
    gc.set_threshold(*GC_THRESHOLDS)
    server.run(sockets=[listener])  # bound by main before anything started
    if not server.started:
        sys.exit(3)  # the app failed to start: uvicorn.run's exit code for it


class _Server(uvicorn.Server):
    """uvicorn's server, giving the app a turn before it closes the open connections: the app
    sets `app.state.before_shutdown` (Connect calls in flight ride on inbound sockets)."""

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        state = getattr(self.config.app, "state", None)
        before = getattr(state, "before_shutdown", None)
        if before is not None:
            try:
                await before()
            except Exception:
                logging.getLogger("weir").exception("draining before shutdown failed")
        await super().shutdown(sockets)
