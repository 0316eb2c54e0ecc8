"""Alembic owns the schema: a freshly migrated database is exactly the SQLAlchemy models."""

from pathlib import Path
from typing import Any

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, inspect
from weir.platform.store.database import make_engine
from weir.platform.store.engine.schema import metadata
from weir.platform.store.migrate import alembic_config, upgrade

from tests.support.backends import empty_database
from tests.support.migrated import migrate


def schema_diffs(engine: Engine) -> list[Any]:
    """What autogenerate would add to a new migration: tables, columns, types, indexes, keys."""
    with engine.connect() as conn:
        # Alembic's SQLite reflection reports a spurious change for every '' server default,
        # so server defaults are compared on the other backends only.
        opts = {"compare_type": True, "compare_server_default": conn.dialect.name != "sqlite"}
        context = MigrationContext.configure(conn, opts=opts)
        return list(compare_metadata(context, metadata))


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def head_revision() -> str | None:
    return ScriptDirectory.from_config(alembic_config()).get_current_head()


def describe(diff: Any) -> str:
    if isinstance(diff, list):  # column changes come grouped per column
        return "; ".join(describe(d) for d in diff)
    op, *rest = diff
    if hasattr(rest[0], "columns") and hasattr(rest[0], "name"):  # an Index or a Table
        target = rest[0]
        table = getattr(target, "table", None)
        where = f" on {table.name}" if table is not None else ""
        return f"{op} {target.name}{where}({', '.join(c.name for c in target.columns)})"
    return f"{op} {rest!r}"


def snapshot(engine: Engine) -> dict[str, Any]:
    """Tables with their columns (name, type, nullability) and indexes, as reflected."""
    found = inspect(engine)
    return {
        table: (
            [(c["name"], str(c["type"]), c["nullable"]) for c in found.get_columns(table)],
            sorted((i["name"] or "", tuple(i["column_names"])) for i in found.get_indexes(table)),
        )
        for table in sorted(found.get_table_names())
    }


def test_a_freshly_migrated_database_matches_the_models(engine: Engine) -> None:
    upgrade(engine)
    diffs = schema_diffs(engine)
    assert diffs == [], "migrations and schema.py disagree:\n" + "\n".join(map(describe, diffs))


def test_migrations_create_every_table_of_the_models(engine: Engine) -> None:
    upgrade(engine)
    tables = set(inspect(engine).get_table_names())
    assert set(metadata.tables) <= tables
    assert tables - set(metadata.tables) == {"alembic_version"}


def test_upgrade_reaches_the_single_head_and_is_idempotent(engine: Engine) -> None:
    assert current_revision(engine) is None
    upgrade(engine)
    assert current_revision(engine) == head_revision()
    before = snapshot(engine)
    upgrade(engine)  # a second boot migrates nothing and breaks nothing
    assert current_revision(engine) == head_revision()
    assert snapshot(engine) == before


def test_downgrade_to_base_and_up_again_rebuilds_the_same_schema(engine: Engine) -> None:
    upgrade(engine)
    first = snapshot(engine)
    config = alembic_config()
    with engine.begin() as conn:
        config.attributes["connection"] = conn
        command.downgrade(config, "base")
    assert set(inspect(engine).get_table_names()) <= {"alembic_version"}
    upgrade(engine)
    assert snapshot(engine) == first


def test_the_suites_migration_shortcut_makes_what_upgrade_makes(
    engine: Engine, database_url: str, backend: str, tmp_path: Path
) -> None:
    # tests.support.migrated copies a template instead of running Alembic for every test:
    # the copy must be indistinguishable from a database `upgrade` migrated itself.
    upgrade(engine)
    other = tmp_path / "copy"
    other.mkdir()
    with empty_database(backend, other) as url:
        migrate(url)
        copy = make_engine(url)
        try:
            assert current_revision(copy) == head_revision()
            assert schema_diffs(copy) == []
            assert snapshot(copy) == snapshot(engine)
        finally:
            copy.dispose()


def test_the_migration_history_is_one_line() -> None:
    heads = ScriptDirectory.from_config(alembic_config()).get_heads()
    assert len(heads) == 1, f"several Alembic heads: {heads}; merge them"
