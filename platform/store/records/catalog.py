"""Apps and their functions as records, and the named operations a sync performs on them
(no other package sees an `apps` or `functions` row)."""

import json
from typing import Any

from sqlalchemy import Connection, Row, delete, func, insert, select, update
from weir.platform.foundation.record_type import record
from weir.platform.store.engine import dialect
from weir.platform.store.engine.schema import apps, functions
from weir.platform.store.records import pauses


@record(slots=True)
class App:
    id: str
    name: str
    url: str
    sdk: str
    framework: str | None
    checksum: str  # of the last sync's URL and functions: an unchanged sync changes nothing
    error: str | None
    synced_at: int | None
    created_at: int


@record(slots=True)
class StoredFunction:
    """A function as its app last synced it; `config` decoded, `config_text` as stored (the
    canonical JSON a new sync's config is compared with)."""

    id: str
    app_id: str
    slug: str
    name: str
    config: dict[str, Any]
    config_text: str
    version: int
    archived: bool  # removed from its app: its runs finish, nothing new starts
    app_sdk: str = ""  # the app's SDK (`weir-…` answers are bound to their requests)


@record(slots=True)
class FunctionVersion:
    """What a sync writes for one function: its config, the app holding it and its version."""

    app_id: str
    name: str
    config_text: str
    version: int
    at: int


def _app(row: Row[Any]) -> App:
    return App(
        id=row.id,
        name=row.name,
        url=row.url,
        sdk=row.sdk or "",
        framework=row.framework,
        checksum=row.checksum or "",
        error=row.error,
        synced_at=row.synced_at,
        created_at=row.created_at,
    )


def _function(row: Row[Any], app_sdk: str = "") -> StoredFunction:
    return StoredFunction(
        id=row.id,
        app_id=row.app_id,
        slug=row.slug,
        name=row.name,
        config=json.loads(row.config),
        config_text=row.config,
        version=int(row.version),
        archived=bool(row.archived),
        app_sdk=app_sdk,
    )


def get_app_by_name(conn: Connection, name: str) -> App | None:
    row = conn.execute(select(apps).where(apps.c.name == name)).first()
    return None if row is None else _app(row)


def list_apps(conn: Connection) -> list[App]:
    return [_app(row) for row in conn.execute(select(apps).order_by(apps.c.name))]


def registered(conn: Connection, app_id: str | None, since: int) -> bool:
    """Whether a sync reached this store: the app `app_id` exists, or, when a sync's answer
    names no app, some app synced at or after `since`."""
    if app_id is not None:
        found = select(apps.c.id).where(apps.c.id == app_id)
    else:
        found = select(apps.c.id).where(apps.c.synced_at >= since).limit(1)
    return conn.execute(found).first() is not None


def insert_app(conn: Connection, app_id: str, name: str, url: str, at: int) -> None:
    conn.execute(insert(apps).values(id=app_id, name=name, url=url, created_at=at))


def mark_app_synced(conn: Connection, app_id: str, at: int) -> None:
    """An unchanged sync: only the time of the last one moves."""
    conn.execute(update(apps).where(apps.c.id == app_id).values(synced_at=at))


def record_app_sync(
    conn: Connection,
    app_id: str,
    *,
    url: str,
    sdk: str,
    framework: str | None,
    checksum: str,
    at: int,
) -> None:
    """A changed sync: where the app is, what serves it, and the checksum of what it sent."""
    values = {"url": url, "sdk": sdk, "framework": framework, "checksum": checksum}
    conn.execute(update(apps).where(apps.c.id == app_id).values(**values, error=None, synced_at=at))


def delete_app(conn: Connection, app_id: str, at: int) -> None:
    """Remove an app; its functions are archived first (their runs still finish)."""
    for fn in app_functions(conn, app_id):
        if not fn.archived:
            archive_function(conn, fn.id, at)
    conn.execute(delete(apps).where(apps.c.id == app_id))
    dialect.notify(conn, dialect.CATALOG)


def all_functions(conn: Connection) -> list[StoredFunction]:
    """Every function, archived ones too (those of a deleted app as well): their runs still
    finish."""
    query = select(functions, apps.c.sdk.label("app_sdk")).join(
        apps, apps.c.id == functions.c.app_id, isouter=True
    )
    return [_function(row, str(row.app_sdk or "")) for row in conn.execute(query)]


def app_functions(conn: Connection, app_id: str) -> list[StoredFunction]:
    query = select(functions).where(functions.c.app_id == app_id)
    return [_function(row) for row in conn.execute(query)]


def get_function_by_slug(conn: Connection, slug: str) -> StoredFunction | None:
    row = conn.execute(select(functions).where(functions.c.slug == slug)).first()
    return None if row is None else _function(row)


def insert_function(conn: Connection, function_id: str, slug: str, new: FunctionVersion) -> None:
    conn.execute(
        insert(functions).values(
            id=function_id, slug=slug, archived=False, created_at=new.at, **_version_values(new)
        )
    )
    dialect.notify(conn, dialect.CATALOG)  # other processes reload their registries


def save_function_version(conn: Connection, function_id: str, new: FunctionVersion) -> None:
    """A changed config (or a slug that moved apps): the function is live again, one version
    up."""
    values = {**_version_values(new), "archived": False}
    conn.execute(update(functions).where(functions.c.id == function_id).values(**values))
    dialect.notify(conn, dialect.CATALOG)


def archive_function(conn: Connection, function_id: str, at: int) -> None:
    """Removed from its app: its runs finish, nothing new starts."""
    values = {"archived": True, "updated_at": at}
    conn.execute(update(functions).where(functions.c.id == function_id).values(**values))
    dialect.notify(conn, dialect.CATALOG)


def _version_values(new: FunctionVersion) -> dict[str, Any]:
    return {
        "app_id": new.app_id,
        "name": new.name,
        "config": new.config_text,
        "version": new.version,
        "updated_at": new.at,
    }


def catalog_version(conn: Connection) -> int:
    """Changes whenever any function changes, or is paused or resumed (`pauses`); other
    processes reload on a new value."""
    value = conn.execute(select(func.max(functions.c.updated_at))).scalar()
    return max(int(value or 0), pauses.version(conn))
