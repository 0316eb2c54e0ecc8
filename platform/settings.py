"""Every setting of a Weir process, from flags or WEIR_* environment variables."""

from dataclasses import dataclass, field

from weir.expressions import Budget, current_budget

WILDCARD_HOSTS = ("", "0.0.0.0", "::")  # a server bound to one of these listens on every address


def local_host(host: str) -> str:
    """Where a local client reaches a server bound to `host` (a wildcard means loopback)."""
    return "127.0.0.1" if host in WILDCARD_HOSTS else host


@dataclass(frozen=True)
class Settings:
    database_url: str = "sqlite:///.weir/weir.db"
    host: str = "127.0.0.1"
    port: int = 8288
    dev: bool = True
    app_urls: tuple[str, ...] = ()
    signing_keys: tuple[str, ...] = ()  # the first signs; all verify
    event_keys: tuple[str, ...] = ()
    workers: int = 128  # calls in flight per process
    lease_ms: int = 30_000
    retry_delay_ms: int | None = None  # fixed delay between retries instead of the backoff table
    sqlite_synchronous: str = "FULL"
    # start mode's login for the UI, REST and GraphQL (weir dev needs none)
    admin_token: str | None = None
    admin_user: str | None = None
    admin_password: str | None = None
    allowed_app_hosts: tuple[str, ...] = ()  # empty: any host may be synced
    allowed_ai_hosts: tuple[str, ...] = ()  # step.ai.infer URLs; empty: any host
    connect_apps: tuple[str, ...] = ()  # apps Connect workers may serve; empty: dev any, start none
    app_timeout_s: float = 7200.0  # the longest one call to an app may take, as Inngest's 2 h
    sync_timeout_s: float = 15.0  # a sync's PUT: the app only posts its config back meanwhile
    calls_per_app: int | None = None  # calls to one app in flight; None: half of `workers`
    calls_per_function: int | None = None  # of those, one function's; None: 3/4 of the app's
    log_format: str = "text"  # "json": one JSON object per line (the default of weir start)
    log_level: str = "info"
    shutdown_grace_s: float = 10.0  # on SIGTERM, how long calls in flight may still run
    retention_ms: int = 0  # delete events and finished runs older than this (0: keep all)
    # a function paused in skip mode: its runs left waiting are cancelled after this (Inngest's)
    paused_run_bound_ms: int = 7 * 24 * 3600 * 1000
    # HTTP hardening: Host names answered besides loopback names and IP literals ("*": any)
    allowed_hosts: tuple[str, ...] = ()
    max_connections: int = 1000  # open client connections; past it the oldest idle one goes
    header_timeout_s: float = 10.0  # a request's headers must arrive within this
    body_timeout_s: float = 30.0  # a body may stall this long (more for a big one: min rate)
    body_budget_bytes: int = 64 * 1024 * 1024  # request bodies held at once, all requests
    # OpenTelemetry: finished runs' traces over OTLP (OTEL_* variables say where), off by default
    otel: bool = False
    otel_payloads: bool = False  # spans carry the run's output, not only its size
    otel_queue: int = 10_000  # finished runs waiting for export; past it their traces drop
    # time, memory and result size of one CEL evaluation (default: WEIR_CEL_* or built in)
    cel_budget: Budget = field(default_factory=current_budget)

    @property
    def signing_key(self) -> str | None:
        return self.signing_keys[0] if self.signing_keys else None

    @property
    def local_url(self) -> str:
        """Where a client on this machine reaches this Weir."""
        host = local_host(self.host)
        return f"http://{f'[{host}]' if ':' in host else host}:{self.port}"

    @property
    def app_call_cap(self) -> int:
        """Calls to one app in flight at once: a hanging app holds at most this many workers."""
        return self.calls_per_app or max(1, self.workers // 2)

    @property
    def function_call_share(self) -> int:
        """Calls one function may hold of its app's when the app has other functions: a
        hanging function leaves at least a quarter of the app's calls (one, at least) to them."""
        cap = self.app_call_cap
        return min(cap, self.calls_per_function or max(1, cap - max(1, cap // 4)))
