"""Fast statements run on the driver's own DB-API connection, so a dialect that wraps it (an
async adapter) is refused when a statement is first compiled for it, not misused later."""

import pytest
from sqlalchemy import literal, select
from sqlalchemy.dialects.postgresql.asyncpg import PGDialect_asyncpg
from sqlalchemy.dialects.postgresql.psycopg import PGDialect_psycopg
from weir.platform.store.engine.fast import Fast


def test_a_dialect_wrapping_its_driver_connection_is_refused() -> None:
    with pytest.raises(ValueError, match=r"postgresql\+asyncpg wraps .* \(sqlite3, psycopg\)"):
        Fast(select(literal(1)))._compiled(PGDialect_asyncpg())


def test_the_synchronous_drivers_compile() -> None:
    compiled = Fast(select(literal(1)))._compiled(PGDialect_psycopg())
    assert compiled.sql.startswith("SELECT")
