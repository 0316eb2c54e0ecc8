"""Hot statements run straight on the DB-API cursor.

SQLAlchemy Core still builds every statement (so names and types come from `schema.py`), but
executing one through a `Connection` costs tens of microseconds of Python per statement, more
than SQLite takes to run it (bench/bench_platform.py counts both). A `Fast` statement is
compiled once per dialect and then sent to the driver's cursor of the same connection, inside
the same transaction and savepoint, with the bind values as a dict.

Driver errors are raised as SQLAlchemy's `DBAPIError` subclasses, as `Connection.execute`
raises them: the writer's retry of a lost race (`database.lost_race`) and callers catching
`IntegrityError` see no difference. Rows are plain named tuples (attribute access, as with
SQLAlchemy's rows); SQLite hands back booleans as 0/1, so readers wrap them in `bool()`.
"""

from collections import namedtuple
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, bindparam, literal_column
from sqlalchemy.dialects import sqlite
from sqlalchemy.engine.default import DefaultDialect
from sqlalchemy.engine.interfaces import Dialect
from sqlalchemy.exc import DBAPIError, StatementError
from sqlalchemy.sql.base import Executable
from sqlalchemy.sql.elements import ColumnElement

_SQLITE_NAMED = sqlite.dialect(paramstyle="named")  # sqlite3 binds :name from a dict


def param(name: str) -> Any:
    """A statement's bind parameter, passed as `b_<name>`: the prefix keeps bind names apart
    from column names, which UPDATE and INSERT would take them for."""
    return bindparam(f"b_{name}")


def constants(values: Iterable[str]) -> list[ColumnElement[Any]]:
    """`values` written into the statement as SQL string literals, for an IN list: a `Fast`
    statement takes no expanding IN parameter. Only for constants of the code (an enum's
    values), never input."""
    return [literal_column(f"'{value}'") for value in values]


def off_index(column: Any) -> ColumnElement[Any]:
    """`column + 0`: the same value, but SQLite takes no index on `column` for the term or
    the ordering it appears in (a walk by another index, or a sort, is wanted there)."""
    return column + literal_column("0")  # type: ignore[no-any-return]


class _Compiled:
    __slots__ = ("defaults", "row_type", "sql")

    def __init__(self, sql: str, defaults: dict[str, Any]) -> None:
        self.sql = sql
        self.defaults = defaults  # binds with a value of their own (e.g. OFFSET 0)
        self.row_type: Any = None  # built from the first result's column names


class Fast:
    """One statement, compiled once per dialect, executed on the raw cursor."""

    __slots__ = ("_by_dialect", "column_keys", "stmt")

    def __init__(self, stmt: Executable, column_keys: Sequence[str] | None = None) -> None:
        self.stmt = stmt
        self.column_keys = list(column_keys) if column_keys is not None else None  # INSERT
        self._by_dialect: dict[str, _Compiled] = {}

    def _compiled(self, dialect: Dialect) -> _Compiled:
        found = self._by_dialect.get(dialect.name)
        if found is None:
            if type(dialect).get_driver_connection is not DefaultDialect.get_driver_connection:
                # `_execute` takes the pool's DB-API connection for the driver's own
                raise ValueError(
                    f"{dialect.name}+{dialect.driver} wraps its driver's connection; fast"
                    " statements need a driver that is its own DB-API (sqlite3, psycopg)"
                )
            target = _SQLITE_NAMED if dialect.name == "sqlite" else dialect
            compiled = self.stmt.compile(dialect=target, column_keys=self.column_keys)  # type: ignore[attr-defined]
            if compiled.post_compile_params or compiled.literal_execute_params:
                raise ValueError(f"not a fast statement (expanding binds): {compiled.string}")
            binds = compiled.binds
            defaults = {
                k: v for k, v in compiled.params.items() if k in binds and not binds[k].required
            }
            found = self._by_dialect[dialect.name] = _Compiled(compiled.string, defaults)
        return found

    def _execute(self, conn: Connection, params: Mapping[str, Any] | None) -> tuple[_Compiled, Any]:
        # Run for nearly every statement of a transition: each lookup here is paid ~20 times.
        compiled = self._by_dialect.get(conn.dialect.name) or self._compiled(conn.dialect)
        values = params or {}
        if compiled.defaults:
            values = {**compiled.defaults, **values}
        cursor = _cursor(conn)
        try:
            cursor.execute(compiled.sql, values)
        except conn.dialect.loaded_dbapi.Error as exc:
            raise _wrapped(conn, compiled.sql, values, exc) from exc
        return compiled, cursor

    def run(self, conn: Connection, params: Mapping[str, Any] | None = None) -> Any:
        """Execute; returns the DB-API cursor (rowcount, fetch*)."""
        return self._execute(conn, params)[1]

    @staticmethod
    def _row_type(compiled: _Compiled, cursor: Any) -> Any:
        if compiled.row_type is None:
            names = [d[0] for d in cursor.description]
            compiled.row_type = namedtuple("Row", names, rename=True)  # type: ignore[misc]
        return compiled.row_type

    def first(self, conn: Connection, params: Mapping[str, Any] | None = None) -> Any:
        """The first row as a named tuple, or None."""
        compiled, cursor = self._execute(conn, params)
        row = cursor.fetchone()
        if row is None:
            return None
        return self._row_type(compiled, cursor)._make(row)

    def all(self, conn: Connection, params: Mapping[str, Any] | None = None) -> list[Any]:
        compiled, cursor = self._execute(conn, params)
        rows = cursor.fetchall()
        if not rows:
            return []
        make = self._row_type(compiled, cursor)._make
        return [make(r) for r in rows]

    def scalar(self, conn: Connection, params: Mapping[str, Any] | None = None) -> Any:
        """The first column of the first row, or None."""
        row = self._execute(conn, params)[1].fetchone()
        return None if row is None else row[0]

    def rowcount(self, conn: Connection, params: Mapping[str, Any] | None = None) -> int:
        return int(self.run(conn, params).rowcount)

    def many(self, conn: Connection, rows: Sequence[Mapping[str, Any]]) -> None:
        """Execute once per row (DB-API executemany)."""
        if not rows:
            return
        compiled = self._compiled(conn.dialect)
        if compiled.defaults:
            rows = [{**compiled.defaults, **r} for r in rows]
        cursor = _cursor(conn)
        try:
            cursor.executemany(compiled.sql, rows)
        except conn.dialect.loaded_dbapi.Error as exc:
            raise _wrapped(conn, compiled.sql, rows, exc) from exc


def _cursor(conn: Connection) -> Any:
    """A cursor of the driver's own connection (`Fast._compiled` refuses dialects that wrap
    it), in the connection's transaction."""
    if not conn.in_transaction():
        conn.begin()  # a reader's snapshot, as SQLAlchemy's autobegin would take it
    return conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]


def _wrapped(conn: Connection, sql: str, params: Any, exc: Exception) -> StatementError:
    """The driver's error as `Connection.execute` raises it."""
    return DBAPIError.instance(sql, params, exc, conn.dialect.loaded_dbapi.Error)
