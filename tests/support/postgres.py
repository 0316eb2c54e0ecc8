"""A PostgreSQL database of their own for integration tests: a fresh schema on the server that
WEIR_TEST_POSTGRES_URL names (`make test` starts one), dropped afterwards."""

import functools
import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import quote

import pytest
from sqlalchemy import Engine, create_engine, make_url, text

POSTGRES_ENV = "WEIR_TEST_POSTGRES_URL"


def postgres_url() -> str:
    """The server's URL; skips the test without one (fails under CI, which always has one).
    Under pytest-xdist, a database of the worker's own on that server (see _worker_database)."""
    url = os.environ.get(POSTGRES_ENV, "").strip()
    if not url:
        missing = f"PostgreSQL not configured: set {POSTGRES_ENV} (make test does)"
        pytest.fail(missing) if os.environ.get("CI") else pytest.skip(missing)
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    return _worker_database(url, worker) if worker else url


@functools.cache
def _worker_database(url: str, worker: str) -> str:
    """`<database>_<worker>`, created on first use and kept for the next run. Schemas keep
    tables apart, but advisory locks and NOTIFY channels are per database: two workers' tests
    on one database would take each other's locks (a claim's try-lock would fail) and hear
    each other's wake-ups."""
    base = make_url(url)
    name = f"{base.database}_{worker}"
    admin = create_engine(url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            found = conn.execute(text("SELECT 1 FROM pg_database WHERE datname = :n"), {"n": name})
            if found.first() is None:
                conn.execute(text(f'CREATE DATABASE "{name}"'))
    finally:
        admin.dispose()
    return base.set(database=name).render_as_string(hide_password=False)


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
