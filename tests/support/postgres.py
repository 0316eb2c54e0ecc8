"""A PostgreSQL database of their own for integration tests: a fresh schema on the server that
WEIR_TEST_POSTGRES_URL names (`make test` starts one), dropped afterwards."""

import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import quote

import pytest
from sqlalchemy import Engine, create_engine, text

POSTGRES_ENV = "WEIR_TEST_POSTGRES_URL"


def postgres_url() -> str:
    """The server's URL; skips the test without one (fails under CI, which always has one)."""
    url = os.environ.get(POSTGRES_ENV, "").strip()
    if not url:
        missing = f"PostgreSQL not configured: set {POSTGRES_ENV} (make test does)"
        pytest.fail(missing) if os.environ.get("CI") else pytest.skip(missing)
    return url


@contextmanager
def fresh_schema() -> Iterator[str]:
    """A URL whose connections see only a new, empty schema (Weir migrates it at start)."""
    base = postgres_url()
    schema = f"weir_it_{secrets.token_hex(6)}"
    admin = create_engine(base, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    sep = "&" if "?" in base else "?"
    try:
        yield f"{base}{sep}options={quote(f'-csearch_path={schema}')}"
    finally:
        _drop(admin, schema)


def _drop(admin: Engine, schema: str) -> None:
    with admin.connect() as conn:
        conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
    admin.dispose()
