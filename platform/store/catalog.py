"""Named operations on apps and their functions."""

from typing import Any

from sqlalchemy import Connection, func, insert, select, update
from weir.platform.store import dialect
from weir.platform.store.schema import apps, functions


def get_app_by_name(conn: Connection, name: str) -> Any:
    return conn.execute(select(apps).where(apps.c.name == name)).first()


def list_apps(conn: Connection) -> list[Any]:
    return list(conn.execute(select(apps).order_by(apps.c.name)))


def insert_app(conn: Connection, **values: Any) -> None:
    conn.execute(insert(apps).values(**values))


def update_app(conn: Connection, app_id: str, **values: Any) -> None:
    conn.execute(update(apps).where(apps.c.id == app_id).values(**values))


def all_functions(conn: Connection) -> list[Any]:
    """Every function, archived ones too: their runs still finish."""
    query = select(
        functions,
        apps.c.url.label("app_url"),
        apps.c.name.label("app_name"),
        apps.c.sdk.label("app_sdk"),
    ).join(apps, apps.c.id == functions.c.app_id)
    return list(conn.execute(query))


def app_functions(conn: Connection, app_id: str) -> list[Any]:
    return list(conn.execute(select(functions).where(functions.c.app_id == app_id)))


def get_function_by_slug(conn: Connection, slug: str) -> Any:
    return conn.execute(select(functions).where(functions.c.slug == slug)).first()


def insert_function(conn: Connection, **values: Any) -> None:
    conn.execute(insert(functions).values(**values))
    dialect.notify(conn, dialect.CATALOG)  # other processes reload their registries


def update_function(conn: Connection, function_id: str, **values: Any) -> None:
    conn.execute(update(functions).where(functions.c.id == function_id).values(**values))
    dialect.notify(conn, dialect.CATALOG)


def catalog_version(conn: Connection) -> int:
    """Changes whenever any function changes; other processes reload on a new value."""
    value = conn.execute(select(func.max(functions.c.updated_at))).scalar()
    return int(value or 0)
