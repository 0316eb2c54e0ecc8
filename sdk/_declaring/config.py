"""Settings from constructor arguments, then `WEIR_*`, then `INNGEST_*` environment variables."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, TypedDict, Unpack

DEFAULT_ORIGIN = "http://127.0.0.1:8288"  # Weir is self-hosted: one local default for both
_FALSY = ("", "0", "false")


@dataclass(frozen=True)
class Settings:
    dev: bool
    api_origin: str
    event_api_origin: str
    event_key: str | None = None
    signing_key: str | None = None
    signing_key_fallback: str | None = None
    env: str | None = None
    serve_origin: str | None = None
    serve_path: str | None = None

    @property
    def mode(self) -> Literal["dev", "cloud"]:
        return "dev" if self.dev else "cloud"

    @property
    def signing_keys(self) -> list[str]:
        return [k for k in (self.signing_key, self.signing_key_fallback) if k]


class Environment:
    """Reads `WEIR_<NAME>`, falling back to `INNGEST_<NAME>`; empty counts as unset."""

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        self._environ = os.environ if environ is None else environ

    def get(self, name: str) -> str | None:
        for prefix in ("WEIR_", "INNGEST_"):
            value = self._environ.get(prefix + name, "").strip()
            if value:
                return value
        return None


def _first(*values: str | None) -> str | None:
    return next((v for v in values if v), None)


def _origin(value: str | None, dev: bool) -> str:
    if not value:
        return DEFAULT_ORIGIN
    if "://" not in value:
        value = ("http://" if dev else "https://") + value
    return value.rstrip("/")


def _dev_flag(value: bool | None, env_value: str | None, signing_key: str | None) -> bool:
    if value is not None:
        return value
    if env_value is not None:
        return env_value.lower() not in _FALSY
    return signing_key is None  # a signing key means "verify requests", i.e. cloud mode


class SettingsArgs(TypedDict, total=False):
    """What an app may set in code (`Weir(...)`); each unset one comes from `WEIR_*`, then
    `INNGEST_*`."""

    dev: bool | None
    base_url: str | None
    api_base_url: str | None
    event_api_base_url: str | None
    event_key: str | None
    signing_key: str | None
    signing_key_fallback: str | None
    env: str | None


def resolve(*, environ: Mapping[str, str] | None = None, **given: Unpack[SettingsArgs]) -> Settings:
    unknown = sorted(set(given) - set(SettingsArgs.__annotations__))
    if unknown:
        allowed = ", ".join(SettingsArgs.__annotations__)
        raise TypeError(f"unknown settings {', '.join(unknown)}; allowed: {allowed}")
    e = Environment(environ)
    key = _first(given.get("signing_key"), e.get("SIGNING_KEY"))
    dev_env = e.get("DEV")
    is_dev = _dev_flag(given.get("dev"), dev_env, key)
    dev_url = dev_env if dev_env and "://" in dev_env else None  # INNGEST_DEV=http://host:port
    base = _first(e.get("BASE_URL"), dev_url)
    return Settings(
        dev=is_dev,
        api_origin=_origin(
            _first(given.get("api_base_url"), given.get("base_url"), e.get("API_BASE_URL"), base),
            is_dev,
        ),
        event_api_origin=_origin(
            _first(
                given.get("event_api_base_url"),
                given.get("base_url"),
                e.get("EVENT_API_BASE_URL"),
                base,
            ),
            is_dev,
        ),
        event_key=_first(given.get("event_key"), e.get("EVENT_KEY")),
        signing_key=key,
        signing_key_fallback=_first(
            given.get("signing_key_fallback"), e.get("SIGNING_KEY_FALLBACK")
        ),
        env=_first(given.get("env"), e.get("ENV")),
        serve_origin=e.get("SERVE_ORIGIN"),
        serve_path=e.get("SERVE_PATH"),
    )
