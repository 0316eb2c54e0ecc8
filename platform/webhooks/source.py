"""A webhook source: its scheme and secrets, its transform, its limits; read from the JSON an
operator sends (REST, CLI, a declarative file) and checked whole before it is saved, every
problem named with what is allowed."""

import json
import re
import secrets as random_secrets
from dataclasses import dataclass
from typing import Any

from weir.platform.ingest.validate import MAX_EVENT_BYTES
from weir.platform.webhooks.transform import Transform, transform_problems
from weir.platform.webhooks.verify import generic
from weir.platform.webhooks.verify.generic import HmacOptions
from weir.platform.webhooks.verify.schemes import (
    DEFAULT_TOLERANCE_S,
    MAX_TOLERANCE_S,
    Scheme,
    secret_problem,
    signs_timestamp,
)

MAX_SECRETS = 2  # the one in use and the next (or the last), while rotating
DEFAULT_MAX_BODY = 1024 * 1024
DEFAULT_RATE_PER_S = 100  # per source and process; bursts of as many are let through
MAX_RATE_PER_S = 10_000
ID_PREFIX = "wh_"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
_FIELDS = {
    "name",
    "scheme",
    "secrets",
    "tolerance_s",
    "hmac",
    "transform",
    "max_body_bytes",
    "rate_per_s",
}


class SourceError(ValueError):
    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


@dataclass(frozen=True)
class Source:
    """A checked source. Built once per save, read per delivery (frozen: shared)."""

    name: str
    scheme: Scheme
    secrets: tuple[str, ...]
    tolerance_s: int
    transform: Transform
    hmac: HmacOptions | None = None
    max_body_bytes: int = DEFAULT_MAX_BODY
    rate_per_s: int = DEFAULT_RATE_PER_S


def new_id() -> str:
    """192 random bits: the URL is as hard to guess as a secret (the signature still decides)."""
    return ID_PREFIX + random_secrets.token_urlsafe(24)


def parse(payload: Any, *, keep_secrets: tuple[str, ...] = ()) -> Source:
    """The source `payload` describes, or SourceError listing every problem. An update that
    omits `secrets` keeps `keep_secrets` (the API never shows them back)."""
    if not isinstance(payload, dict):
        raise SourceError(["a webhook source is a JSON object"])
    problems = [
        f"unknown field {key!r}; allowed: {', '.join(sorted(_FIELDS))}"
        for key in payload
        if key not in _FIELDS
    ]
    name = payload.get("name")
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        problems.append(
            "name must be 1 to 100 letters, digits, '.', '_' or '-', starting with a letter "
            f"or digit; got {name!r}"
        )
    try:
        scheme = Scheme(str(payload.get("scheme")))
    except ValueError:
        allowed = ", ".join(s.value for s in Scheme)
        raise SourceError([*problems, f"scheme must be one of {allowed}"]) from None
    options = _hmac(payload.get("hmac"), scheme, problems)
    keys = _secrets(payload.get("secrets", list(keep_secrets) or None), scheme, problems)
    tolerance = _tolerance(payload.get("tolerance_s"), scheme, options, problems)
    transform = _transform(payload.get("transform"), problems)
    max_body = _int(
        payload.get("max_body_bytes", DEFAULT_MAX_BODY),
        "max_body_bytes",
        1,
        MAX_EVENT_BYTES,
        problems,
    )
    rate = _int(
        payload.get("rate_per_s", DEFAULT_RATE_PER_S), "rate_per_s", 1, MAX_RATE_PER_S, problems
    )
    if problems:
        raise SourceError(problems)
    assert isinstance(name, str) and transform is not None
    return Source(name, scheme, keys, tolerance, transform, options, max_body, rate)


def _secrets(value: Any, scheme: Scheme, problems: list[str]) -> tuple[str, ...]:
    if not isinstance(value, list) or not 1 <= len(value) <= MAX_SECRETS:
        problems.append(
            f"secrets must be a list of 1 or {MAX_SECRETS} secrets (two while rotating: "
            "a delivery signed by either is accepted)"
        )
        return ()
    found = []
    for index, secret in enumerate(value):
        problem = "a secret is a string" if not isinstance(secret, str) else None
        problem = problem or secret_problem(scheme, secret)
        if problem:
            problems.append(f"secrets[{index}]: {problem}")
        else:
            found.append(secret)
    return tuple(found)


def _tolerance(value: Any, scheme: Scheme, options: HmacOptions | None, problems: list[str]) -> int:
    if value is None:
        return DEFAULT_TOLERANCE_S[scheme] if signs_timestamp(scheme, options) else 0
    if not signs_timestamp(scheme, options):
        problems.append(
            f"tolerance_s applies only to a scheme that signs a timestamp; {scheme} signs none"
        )
        return 0
    return _int(value, "tolerance_s", 1, MAX_TOLERANCE_S, problems)


def _hmac(value: Any, scheme: Scheme, problems: list[str]) -> HmacOptions | None:
    if scheme != Scheme.HMAC:
        if value is not None:
            problems.append("hmac options apply only to the scheme 'hmac'")
        return None
    if not isinstance(value, dict) or not isinstance(value.get("header"), str):
        problems.append('the scheme \'hmac\' needs hmac: {"header": "X-Signature", ...}')
        return None
    stamp = value.get("timestamp_header")
    if stamp is not None and not isinstance(stamp, str):
        problems.append("hmac.timestamp_header must be a header name")
        return None
    try:
        options = HmacOptions(
            header=value["header"],
            algorithm=generic.Algorithm(value.get("algorithm", "sha256")),
            encoding=generic.Encoding(value.get("encoding", "hex")),
            prefix=str(value.get("prefix", "")),
            template=str(value.get("template", "{body}")),
            timestamp_header=stamp,
            timestamp_unit=generic.TimestampUnit(value.get("timestamp_unit", "s")),
        )
    except ValueError:
        problems.append(
            "hmac.algorithm is sha1, sha256 or sha512; hmac.encoding hex or base64; "
            "hmac.timestamp_unit s or ms"
        )
        return None
    extra = set(value) - set(HmacOptions.__dataclass_fields__)
    problems.extend(f"unknown field hmac.{key}" for key in sorted(extra))
    problems.extend(generic.problems(options))
    return options


def _transform(value: Any, problems: list[str]) -> Transform | None:
    if not isinstance(value, dict) or not isinstance(value.get("name"), str):
        problems.append(
            "transform must be an object of CEL expressions over `body`, `headers` and "
            "`query`: name (required), data (default `body`), id, ts"
        )
        return None
    extra = set(value) - {"name", "data", "id", "ts"}
    fields = {key: value.get(key) for key in ("data", "id", "ts")}
    wrong = [k for k, v in fields.items() if v is not None and not isinstance(v, str)]
    if extra or wrong:
        problems.append("transform's fields are name, data, id and ts, each a CEL expression")
        return None
    transform = Transform(
        name=value["name"], data=fields["data"] or "body", id=fields["id"], ts=fields["ts"]
    )
    problems.extend(transform_problems(transform))
    return transform


def _int(value: Any, what: str, least: int, most: int, problems: list[str]) -> int:
    if type(value) is not int or not least <= value <= most:
        problems.append(f"{what} must be an integer from {least} to {most}, got {value!r}")
        return least
    return value


# -- stored form ---------------------------------------------------------------------------
def to_json(source: Source) -> str:
    return json.dumps(as_input(source, with_secrets=True), sort_keys=True)


def from_json(text: str) -> Source:
    """A stored source: it was checked when saved, so this only rebuilds it."""
    return parse(json.loads(text))


def as_input(source: Source, *, with_secrets: bool) -> dict[str, Any]:
    """The source as the JSON that makes it (`parse`); secrets shown only by their end."""
    shown = list(source.secrets) if with_secrets else [masked(s) for s in source.secrets]
    out: dict[str, Any] = {
        "name": source.name,
        "scheme": source.scheme.value,
        "secrets": shown,
        "transform": {
            key: getattr(source.transform, key)
            for key in ("name", "data", "id", "ts")
            if getattr(source.transform, key) is not None
        },
        "max_body_bytes": source.max_body_bytes,
        "rate_per_s": source.rate_per_s,
    }
    if signs_timestamp(source.scheme, source.hmac):
        out["tolerance_s"] = source.tolerance_s
    if source.hmac is not None:
        out["hmac"] = {
            key: value.value if hasattr(value, "value") else value
            for key, value in source.hmac.__dict__.items()
            if value is not None
        }
    return out


def masked(secret: str) -> str:
    return "…" + secret[-4:]
